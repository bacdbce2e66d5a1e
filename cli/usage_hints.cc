#include "cli/usage_hints.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"

namespace roboloop::cli {
namespace {

constexpr size_t kFilesNamed = 3;  // files a hint names before "and N more"

// `files` for a message: the first kFilesNamed, then how many more there are.
std::string NameFiles(const std::vector<std::string>& files) {
  if (files.size() <= kFilesNamed) return absl::StrJoin(files, " ");
  return absl::StrCat(absl::StrJoin(files.begin(), files.begin() + kFilesNamed, " "), " and ",
                      files.size() - kFilesNamed, " more");
}

// `app` and its parsed subcommands, outermost first.
std::vector<const CLI::App*> ParsedChain(const CLI::App& app) {
  std::vector<const CLI::App*> chain = {&app};
  for (std::vector<CLI::App*> parsed = app.get_subcommands(); !parsed.empty();
       parsed = parsed.front()->get_subcommands()) {
    chain.push_back(parsed.front());
  }
  return chain;
}

// The option `name` of the innermost command of `chain` that has one; null when none has.
const CLI::Option* FindOption(const std::vector<const CLI::App*>& chain, const std::string& name) {
  for (auto app = chain.rbegin(); app != chain.rend(); ++app) {
    if (const CLI::Option* option = (*app)->get_option_no_throw(name)) return option;
  }
  return nullptr;
}

bool IsSubcommandName(const std::vector<const CLI::App*>& chain, const std::string& token) {
  return std::any_of(chain.begin() + 1, chain.end(), [&](const CLI::App* app) { return app->get_name() == token; });
}

bool TakesOneValuePerUse(const CLI::Option& option) {
  return option.get_type_size_max() == 1 && (option.get_expected_max() == 1 || !option.get_allow_extra_args());
}

constexpr size_t kMaxSuggestionDistance = 2;  // edits a "did you mean" suggestion may be away

// Edit distance of `a` and `b`: insertions, deletions, substitutions and swaps of neighbours.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// The names of `command`'s subcommands.
std::vector<std::string> SubcommandNames(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::App* sub : command.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// The long (--name) and short (-n) names of `command`'s options.
std::vector<std::string> OptionNames(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

// Why `extras`, positional arguments left over, do not fit `command`: not one of its subcommands
// (naming them, and the nearest one) when it takes no positionals but has subcommands, else more
// than it takes.
std::string WhatIsUnexpected(const CLI::App& command, const std::vector<std::string>& extras) {
  const std::string quoted = absl::StrCat("'", absl::StrJoin(extras, "' '"), "'");
  std::vector<std::string> positionals;
  for (const CLI::Option* option : command.get_options([](const CLI::Option* o) { return o->get_positional(); })) {
    positionals.push_back(option->get_name());
  }
  const std::vector<std::string> subcommands = SubcommandNames(command);
  if (positionals.empty() && !subcommands.empty()) {
    const std::vector<std::string> nearest = NearestNames(extras.front(), subcommands);
    return absl::StrCat("unknown command ", quoted, " (its commands: ", absl::StrJoin(subcommands, ", "), ")",
                        nearest.empty() ? "" : absl::StrCat("; did you mean '", absl::StrJoin(nearest, "' or '"), "'?"));
  }
  return absl::StrCat(extras.size() == 1 ? "unexpected argument " : "unexpected arguments ", quoted,
                      "; the command takes ",
                      positionals.empty() ? "no positional arguments" : absl::StrJoin(positionals, " "));
}

}  // namespace

std::string PatternOf(const std::vector<std::string>& files) {
  if (files.empty()) return "*";
  std::string prefix = files.front();
  std::string suffix = files.front();
  size_t shortest = files.front().size();
  for (const std::string& file : files) {
    prefix.resize(std::mismatch(prefix.begin(), prefix.end(), file.begin(), file.end()).first - prefix.begin());
    const auto common_end = std::mismatch(suffix.rbegin(), suffix.rend(), file.rbegin(), file.rend()).first;
    suffix.erase(0, suffix.size() - (common_end - suffix.rbegin()));
    shortest = std::min(shortest, file.size());
  }
  if (prefix.size() + suffix.size() > shortest) suffix.erase(0, prefix.size() + suffix.size() - shortest);
  return absl::StrCat(prefix, "*", suffix);
}

std::string SeveralFilesHint(const OneValueOption& option, const std::vector<std::string>& files) {
  const std::string given = absl::StrCat(files.size(), " files ", NameFiles(files));
  if (option.takes_patterns) {
    return absl::StrCat(option.name, " takes one value, not the ", given,
                        " (a pattern the shell expanded?): quote the pattern so that roboloop expands it, e.g. ",
                        option.name, " '", PatternOf(files), "'",
                        option.repeatable ? absl::StrCat(", or give ", option.name, " once per file") : "");
  }
  if (option.repeatable) {
    return absl::StrCat(option.name, " takes one file per use, not the ", given, ": give ", option.name,
                        " once per file, e.g. ", option.name, " ", files[0], " ", option.name, " ", files[1]);
  }
  return absl::StrCat(option.name, " takes one file, not the ", given);
}

std::string UnexpectedFilesHint(const CLI::App& app, const std::vector<std::string>& args,
                                const std::function<bool(const CLI::Option&)>& takes_patterns) {
  const std::vector<std::string> extras = app.remaining(true);
  if (extras.empty()) return "";
  const std::vector<const CLI::App*> chain = ParsedChain(app);
  const size_t first_extra = std::find(args.begin(), args.end(), extras.front()) - args.begin();
  if (first_extra == args.size()) return "";
  // The option token: the nearest one before the first unexpected argument.
  size_t at = first_extra;
  while (at > 0 && !absl::StartsWith(args[at - 1], "-")) {
    if (IsSubcommandName(chain, args[--at])) return "";
  }
  if (at == 0) return "";
  const size_t option_at = at - 1;
  std::string name = args[option_at];
  std::vector<std::string> files;
  if (const size_t equals = name.find('='); equals != std::string::npos) {
    files.push_back(name.substr(equals + 1));
    name.resize(equals);
  }
  for (size_t i = option_at + 1; i < args.size() && !absl::StartsWith(args[i], "-"); ++i) files.push_back(args[i]);
  const auto among_files = [&files](const std::string& extra) {
    return std::find(files.begin(), files.end(), extra) != files.end();
  };
  if (files.size() < 2 || !std::all_of(extras.begin(), extras.end(), among_files) ||
      !std::all_of(files.begin(), files.end(), PathExists)) {
    return "";
  }
  const CLI::Option* option = FindOption(chain, name);
  if (option == nullptr || !TakesOneValuePerUse(*option)) return "";
  OneValueOption described;
  described.name = name;
  described.repeatable =
      option->get_expected_max() > 1 || option->get_multi_option_policy() != CLI::MultiOptionPolicy::Throw;
  described.takes_patterns = takes_patterns(*option);
  return SeveralFilesHint(described, files);
}

std::string UnexpectedPositionalsMessage(const CLI::App& app) {
  const std::vector<std::string> extras = app.remaining(true);
  const auto looks_like_option = [](const std::string& arg) { return absl::StartsWith(arg, "-"); };
  if (extras.empty() || std::any_of(extras.begin(), extras.end(), looks_like_option)) return "";
  const std::vector<const CLI::App*> chain = ParsedChain(app);
  std::vector<std::string> given;  // the commands' names, after the program's
  for (auto command = chain.begin() + 1; command != chain.end(); ++command) given.push_back((*command)->get_name());
  const std::string command_line = absl::StrJoin(given, " ");
  return absl::StrCat("roboloop: ", command_line, command_line.empty() ? "" : ": ",
                      WhatIsUnexpected(*chain.back(), extras), "\n",
                      CLI::Formatter().make_usage(chain.back(), absl::StrCat("roboloop", given.empty() ? "" : " ",
                                                                              command_line)),
                      "Run with --help for more information.\n");
}

std::vector<std::string> NearestNames(const std::string& given, const std::vector<std::string>& known) {
  std::vector<std::string> nearest;
  size_t best = std::min(kMaxSuggestionDistance, given.size() == 0 ? 0 : given.size() - 1);
  for (const std::string& name : known) {
    const size_t distance = EditDistance(given, name);
    if (distance > best || distance == 0) continue;
    if (distance < best) nearest.clear();
    best = distance;
    if (std::find(nearest.begin(), nearest.end(), name) == nearest.end()) nearest.push_back(name);
  }
  return nearest;
}

std::string DidYouMeanHint(const CLI::App& app) {
  const CLI::App& command = *ParsedChain(app).back();
  const bool takes_positionals =
      !command.get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
  std::vector<std::string> hints;
  for (const std::string& extra : app.remaining(true)) {
    const bool option = absl::StartsWith(extra, "-");
    if (!option && takes_positionals) continue;
    const std::string given = option ? extra.substr(0, extra.find('=')) : extra;
    const std::vector<std::string> nearest =
        NearestNames(given, option ? OptionNames(command) : SubcommandNames(command));
    if (nearest.empty()) continue;
    hints.push_back(absl::StrCat("unknown ", option ? "option '" : "command '", given, "'; did you mean '",
                                 absl::StrJoin(nearest, "' or '"), "'?"));
  }
  return absl::StrJoin(hints, "\n");
}

}  // namespace roboloop::cli
