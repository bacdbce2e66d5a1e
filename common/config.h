// YAML configuration files parsed into proto messages (docs/architecture.md §5: YAML on the surface,
// a proto message as the schema). Every error names the file and line, and unknown keys and
// type mismatches are errors.
#pragma once

#include <string>

#include <google/protobuf/message.h>

#include "absl/status/status.h"

namespace roboloop {

// Parses YAML `text` into `message` (cleared first). `source` names the input in errors,
// e.g. "configs/pipelines/quickstart.yaml". Keys match proto field names or their JSON names;
// enums take their value names; google.protobuf.Struct/Value/ListValue take any YAML.
// Errors: INVALID_ARGUMENT "<source>:<line>:<column>: <what>", one line for each unknown key, each
// key given twice in one mapping of a message and each value of the wrong type or shape, all of
// them (a problem inside a list stops that list).
absl::Status ParseYamlToProto(const std::string& text, const std::string& source,
                              google::protobuf::Message* message);

// Reads the file at `path` and parses it as with ParseYamlToProto. NOT_FOUND if unreadable;
// INVALID_ARGUMENT naming `path` for a directory or another file that is not a regular file, a
// FIFO or a character device.
absl::Status LoadYamlFile(const std::string& path, google::protobuf::Message* message);

}  // namespace roboloop
