#include "cli/table.h"

#include <algorithm>

#include "common/status.h"

namespace roboloop::cli {

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

namespace {

// `cell` on one line: trailing whitespace dropped, line breaks inside it shown as " | ".
std::string OneLine(const std::string& cell) {
  std::string line;
  const size_t end = cell.find_last_not_of(" \t\r\n");
  for (size_t i = 0; end != std::string::npos && i <= end; ++i) {
    if (cell[i] == '\n') {
      line += " | ";
    } else if (cell[i] != '\r') {
      line += cell[i];
    }
  }
  return line;
}

}  // namespace

void Table::AddRow(std::vector<std::string> cells) {
  ROBOLOOP_CHECK_MSG(cells.size() <= headers_.size(), "row has ", cells.size(), " cells for ",
                     headers_.size(), " columns");
  cells.resize(headers_.size());
  for (std::string& cell : cells) cell = OneLine(cell);
  rows_.push_back(std::move(cells));
}

std::string Table::Render() const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    widths[c] = headers_[c].size();
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  auto render_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      line += cells[c];
      if (c + 1 < cells.size()) line += std::string(widths[c] - cells[c].size() + 2, ' ');
    }
    return line + "\n";
  };
  std::string text = render_line(headers_);
  for (const auto& row : rows_) text += render_line(row);
  return text;
}

}  // namespace roboloop::cli
