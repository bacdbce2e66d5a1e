// Plain-text tables for listing commands: columns padded to their widest cell.
#pragma once

#include <string>
#include <vector>

namespace roboloop::cli {

// Accumulates rows and renders them with a header line. Not thread-safe.
class Table {
 public:
  // A table with these column headers.
  explicit Table(std::vector<std::string> headers);

  // Appends a row; missing cells are empty, extra cells are a bug. A cell's line breaks are shown
  // as " | " and its trailing whitespace dropped, so that each row stays one line.
  void AddRow(std::vector<std::string> cells);

  // Rows added so far.
  size_t size() const { return rows_.size(); }

  // The rendered table, one line per row, columns separated by two spaces.
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace roboloop::cli
