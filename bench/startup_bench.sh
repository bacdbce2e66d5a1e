#!/usr/bin/env bash
# Start-up of the torch- and GL-free commands (docs/BENCHMARKS.md, "Command start-up") side by side
# with two anchors: /bin/true (the cost of starting any process) and an empty C program linked with
# libOSMesa (what every command paid while the binary linked GL). Runs the commands in turn, ROUNDS
# times (default 5), and prints for each the median wall time and peak RSS, and its median ratio
# (min–max) to the OSMesa anchor, with the settings that move the numbers.
#   bash bench/startup_bench.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
rounds="${2:-5}"
roboloop="$build/bin/roboloop"
[ -x "$roboloop" ] || { echo "startup_bench: no $roboloop; build first (bash scripts/build.sh)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

printf 'int main(void) { return 0; }\n' > "$work/empty.c"
cc "$work/empty.c" -Wl,--no-as-needed -lOSMesa -o "$work/empty-osmesa"
"$roboloop" registry ls --root "$work/store" > /dev/null  # creates the store once

names=("true" "empty+OSMesa" "roboloop --version" "roboloop registry ls")
commands=("/bin/true" "$work/empty-osmesa" "$roboloop --version" "$roboloop registry ls --root $work/store")

# Runs command $1 once; appends "<wall ms> <peak RSS KiB>" to file $2.
measure() {
  local start end
  start=$(date +%s%N)
  /usr/bin/time -f '%M' -o "$work/rss" $1 > /dev/null
  end=$(date +%s%N)
  echo "$(( (end - start) / 1000 )) $(cat "$work/rss")" >> "$2"
}

for _ in $(seq "$rounds"); do
  for i in "${!commands[@]}"; do measure "${commands[$i]}" "$work/m$i"; done
done

echo "settings: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "OMP/OPENBLAS variables: $(env | grep -E '^(OMP|OPENBLAS)_' | tr '\n' ' ' || true)(none set if empty)," \
  "linked libraries: $(ldd "$roboloop" | wc -l)"
printf '%-24s %12s %10s %28s\n' command "wall ms" "RSS MiB" "ratio to empty+OSMesa"
for i in "${!commands[@]}"; do
  paste -d' ' "$work/m$i" "$work/m1" | awk -v name="${names[$i]}" '
    { wall[NR] = $1 / 1000; rss[NR] = $2 / 1024; ratio[NR] = $1 / $3 }
    function median(a, n,   s, i, j, t) {
      for (i = 1; i <= n; i++) s[i] = a[i]
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
      return n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
    }
    END {
      lo = hi = ratio[1]
      for (i = 2; i <= NR; i++) { if (ratio[i] < lo) lo = ratio[i]; if (ratio[i] > hi) hi = ratio[i] }
      printf "%-24s %12.1f %10.1f %14.2f (%.2f-%.2f)\n", name, median(wall, NR), median(rss, NR), median(ratio, NR), lo, hi
    }'
done
