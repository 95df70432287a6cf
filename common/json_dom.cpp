#include "common/json_dom.hpp"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ssim {
namespace {

using nlohmann::json;

// nlohmann's SAX events into a DOM, as its own json_sax_dom_parser builds it (a stack of the open
// containers; a value goes to the end of the open array or to the key just read), plus the
// duplicate check: a key is a duplicate when the object being filled holds it already.
class UniqueKeyDom {
 public:
  UniqueKeyDom(json& root, const JsonDuplicateKey& on_duplicate)
      : root_(root), on_duplicate_(on_duplicate) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return put(v); }
  bool string(json::string_t& v) { return put(std::move(v)); }
  bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }

  bool start_object(std::size_t /*elements: unknown in JSON text*/) {
    open_.push_back(Open{slot(json::value_t::object), nullptr});
    return true;
  }
  bool key(json::string_t& k) {
    auto& members = open_.back().value->get_ref<json::object_t&>();
    auto [it, inserted] = members.try_emplace(k);
    open_.back().key = &it->first;
    next_ = &it->second;
    if (!inserted && on_duplicate_) on_duplicate_(path(), k);
    return true;
  }
  bool end_object() {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) {
    open_.push_back(Open{slot(json::value_t::array), nullptr});
    return true;
  }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  // As nlohmann's DOM parser: the exception the parser made, thrown (json::parse_error, or
  // json::out_of_range for a number beyond a double).
  template <typename Exception>
  bool parse_error(std::size_t /*byte*/, const std::string& /*token*/, const Exception& e) {
    throw e;
  }

 private:
  struct Open {
    json* value;
    const std::string* key;  // the member being filled (objects)
  };

  // Where the next value goes, holding `v`.
  template <typename V>
  json* slot(V&& v) {
    if (open_.empty()) {
      root_ = json(std::forward<V>(v));
      return &root_;
    }
    json& parent = *open_.back().value;
    if (parent.is_array()) {
      parent.get_ref<json::array_t&>().emplace_back(std::forward<V>(v));
      return &parent.get_ref<json::array_t&>().back();
    }
    *next_ = json(std::forward<V>(v));
    return next_;
  }
  template <typename V>
  bool put(V&& v) {
    slot(std::forward<V>(v));
    return true;
  }

  std::string path() const {
    std::string p;
    for (const Open& o : open_) {
      if (o.value->is_object()) {
        if (!p.empty()) p += '.';
        p += *o.key;
      } else {
        p += '[' + std::to_string(o.value->size() - 1) + ']';
      }
    }
    return p;
  }

  json& root_;
  const JsonDuplicateKey& on_duplicate_;
  std::vector<Open> open_;
  json* next_ = nullptr;  // the value of the key just read
};

}  // namespace

nlohmann::json parse_json_unique_keys(std::string_view text, const JsonDuplicateKey& on_duplicate) {
  json doc;
  UniqueKeyDom dom(doc, on_duplicate);
  json::sax_parse(text.begin(), text.end(), &dom);
  return doc;
}

nlohmann::json parse_json_unique_keys(std::istream& in, const JsonDuplicateKey& on_duplicate) {
  json doc;
  UniqueKeyDom dom(doc, on_duplicate);
  json::sax_parse(in, &dom);
  return doc;
}

}  // namespace ssim
