// JSON text into nlohmann's DOM for the readers that refuse a key given twice in one object (the
// schedule JSON, nccl-tests' -J output, PyTorch profiler traces): nlohmann itself keeps the last
// of two equal keys without a word.
//
//   const nlohmann::json doc = parse_json_unique_keys(text, [&](const std::string& path,
//                                                               const std::string& key) {
//     throw InputError(file + ": " + path + ": duplicate key");   // or note the first and go on
//   });
//
// Syntax errors throw what nlohmann::json::parse throws (json::parse_error with its byte,
// json::out_of_range 406 for a number beyond a double such as 1e400), as the whole input must be
// one value. The parse is linear in the input: nlohmann's parse with a callback scans the parent
// of every object it closes for a discarded value (json_sax_dom_callback_parser::end_object in
// nlohmann/detail/input/json_sax.hpp, 3.11), which is quadratic in the length of an array of
// objects (a schedule round of 30,000 transfers took 22 s); this builds the same DOM through
// nlohmann's SAX interface instead.
#pragma once

#include <functional>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ssim {

// Called for each key that repeats an earlier key of its object, in document order, with the key
// path ("rounds[0].transfers[3].src": object keys joined by '.', array indices in brackets, the
// repeated key last) and the key itself. It may throw to end the parse there (before any later
// syntax error); when it returns, the parse goes on and the later value replaces the earlier one.
using JsonDuplicateKey = std::function<void(const std::string& path, const std::string& key)>;

nlohmann::json parse_json_unique_keys(std::string_view text, const JsonDuplicateKey& on_duplicate);
nlohmann::json parse_json_unique_keys(std::istream& in, const JsonDuplicateKey& on_duplicate);

}  // namespace ssim
