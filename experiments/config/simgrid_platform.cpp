// SimGrid platform files (XML, version 4.1) read as stragglesim topologies (docs/user_guide.md,
// "Topologies from other simulators"):
//   topology: {simgrid: platform.xml}
//   topology: platform.xml   (or {file: ...}, --topology: recognised by starting with '<')
//
// What is read: one <zone routing="Full"> holding <host>, <link> and <route> elements, or one
// FLAT <cluster> (expanded below into the hosts, links and routes SimGrid gives it).
// - Hosts become GPU ranks in document order (their speed is checked, not used).
// - A SHARED link is one capacity: it becomes one directed link, so every route must cross it
//   the same way (a symmetrical route over it is refused). A SPLITDUPLEX link is two capacities
//   (SimGrid's link_UP and link_DOWN): two directed links, each crossed one way.
// - SimGrid links join no vertices; routes are lists of links. The vertices are inferred: the
//   end of one link of a route is the start of the next, a route starts at its source host and
//   ends at its destination, and the points no host stands on become switches. Then every
//   declared route (and the reverse of a symmetrical one) must be the route stragglesim takes
//   on that graph (lowest latency, then fewest hops, then lowest link ids), or the file is
//   refused at that route's line.
// Everything else (other cluster kinds, other routings, nested zones, properties, profiles, FATPIPE
// and WIFI links) is refused at its line. The XML is read by a small reader of the subset platform
// files use: declaration, DOCTYPE, comments, elements and quoted attributes.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/checked.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/reader.hpp"
#include "topologies/generators.hpp"

namespace ssim::experiments {

namespace {

struct XmlElement {
  std::string name;
  int line = 0;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<XmlElement> children;
};

class XmlReader {
 public:
  XmlReader(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {}

  XmlElement document() {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    skip_misc(true);
    if (at_end() || text_[pos_] != '<') fail("the file does not start with an XML element");
    XmlElement root = element(0);
    skip_misc(false);
    if (!at_end()) fail("text after the root element </" + root.name + ">");
    return root;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(file_ + ":" + std::to_string(line_) + ": " + what);
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  bool starts(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }
  void advance(std::size_t n) {
    for (std::size_t i = 0; i < n && pos_ < text_.size(); ++i) {
      if (text_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }
  void skip_space() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                         text_[pos_] == '\r'))
      advance(1);
  }
  void skip_past(std::string_view end, const char* what) {
    const std::size_t at = text_.find(end, pos_);
    if (at == std::string_view::npos) fail(std::string("unterminated ") + what);
    advance(at + end.size() - pos_);
  }
  // Whitespace, comments, processing instructions and (before the root) a DOCTYPE.
  void skip_misc(bool prolog) {
    for (;;) {
      skip_space();
      if (starts("<!--")) {
        skip_past("-->", "comment");
      } else if (starts("<?")) {
        skip_past("?>", "<?...?> declaration");
      } else if (prolog && starts("<!DOCTYPE")) {
        const std::size_t open = text_.find('[', pos_);
        const std::size_t close = text_.find('>', pos_);
        if (open != std::string_view::npos && open < close)
          fail("a DOCTYPE with an internal subset ([...]) is not read");
        skip_past(">", "DOCTYPE");
      } else {
        return;
      }
    }
  }
  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.' ||
           c == ':';
  }
  std::string name() {
    const std::size_t start = pos_;
    while (!at_end() && name_char(text_[pos_])) advance(1);
    if (pos_ == start) fail("an element or attribute name was expected");
    return std::string(text_.substr(start, pos_ - start));
  }
  std::string attribute_value() {
    if (at_end() || (text_[pos_] != '"' && text_[pos_] != '\''))
      fail("a quoted value was expected");
    const char quote = text_[pos_];
    advance(1);
    std::string value;
    for (;;) {
      if (at_end()) fail("unterminated attribute value");
      const char c = text_[pos_];
      if (c == quote) break;
      if (c == '<') fail("'<' inside an attribute value");
      if (c == '&') {
        const std::size_t semi = text_.find(';', pos_);
        if (semi == std::string_view::npos || semi - pos_ > 8) fail("a bad '&' entity");
        const std::string_view entity = text_.substr(pos_ + 1, semi - pos_ - 1);
        if (entity == "lt")
          value += '<';
        else if (entity == "gt")
          value += '>';
        else if (entity == "amp")
          value += '&';
        else if (entity == "quot")
          value += '"';
        else if (entity == "apos")
          value += '\'';
        else
          fail("the entity &" + std::string(entity) +
               "; is not read (only &lt; &gt; &amp; &quot; &apos;)");
        advance(semi + 1 - pos_);
        continue;
      }
      value += c;
      advance(1);
    }
    advance(1);
    return value;
  }
  XmlElement element(int depth) {
    if (depth > 32) fail("elements nested more than 32 deep");
    XmlElement e;
    e.line = line_;
    advance(1);  // '<'
    e.name = name();
    for (;;) {
      skip_space();
      if (at_end()) fail("unterminated <" + e.name + ">");
      if (starts("/>")) {
        advance(2);
        return e;
      }
      if (text_[pos_] == '>') {
        advance(1);
        break;
      }
      const int line = line_;
      std::string key = name();
      skip_space();
      if (at_end() || text_[pos_] != '=') fail("'=' expected after attribute " + key);
      advance(1);
      skip_space();
      std::string value = attribute_value();
      for (const auto& [k, v] : e.attributes) {
        if (k == key) {
          line_ = line;
          fail("<" + e.name + "> has attribute " + key + " twice");
        }
      }
      e.attributes.emplace_back(std::move(key), std::move(value));
    }
    for (;;) {
      skip_misc(false);
      if (at_end()) fail("<" + e.name + "> (line " + std::to_string(e.line) + ") is not closed");
      if (starts("</")) {
        advance(2);
        const std::string end = name();
        if (end != e.name) {
          fail("</" + end + "> closes <" + e.name + "> of line " + std::to_string(e.line));
        }
        skip_space();
        if (at_end() || text_[pos_] != '>') fail("'>' expected after </" + end);
        advance(1);
        return e;
      }
      if (starts("<![CDATA[")) fail("CDATA sections are not read");
      if (text_[pos_] != '<')
        fail("text inside <" + e.name + "> (platform files hold elements only)");
      e.children.push_back(element(depth + 1));
    }
  }

  std::string_view text_;
  std::string file_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

// A number with one of SimGrid's units (src/xbt/xbt_parse_units.cpp): the unit's value times
// 1000 per decimal prefix (k M G T P E Z Y) or 1024 per binary one (Ki Mi ... Yi); a bare
// number takes the default unit, as SimGrid does (it warns).
double value_with_unit(std::string_view text,
                       const std::vector<std::pair<std::string, double>>& units, bool prefixed,
                       const std::string& default_unit, bool& ok) {
  ok = false;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || !std::isfinite(v)) return 0;
  std::string unit(end, text.data() + text.size());
  if (unit.empty()) unit = default_unit;
  static const char* const decimal[] = {"k", "M", "G", "T", "P", "E", "Z", "Y"};
  static const char* const binary[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"};
  for (const auto& [u, scale] : units) {
    if (unit == u) {
      ok = true;
      return v * scale;
    }
    if (!prefixed) continue;
    double d = scale;
    double b = scale;
    for (int i = 0; i < 8; ++i) {
      d *= 1000.0;
      b *= 1024.0;
      if (unit == decimal[i] + u) {
        ok = true;
        return v * d;
      }
      if (unit == binary[i] + u) {
        ok = true;
        return v * b;
      }
    }
  }
  return 0;
}

struct Resource {
  std::string link;      // the SimGrid link id
  std::string suffix;    // "", "_UP" or "_DOWN" (SimGrid's names of split-duplex halves)
  int line = 0;          // the <link>
  double bandwidth = 0;  // bytes/s
  double latency = 0;    // s
  int first_route_line = 0;
};

struct RouteUse {
  int src = 0;
  int dst = 0;
  std::vector<int> resources;
  int line = 0;
  bool reverse = false;  // the reverse of a symmetrical route
};

class PlatformReader {
 public:
  explicit PlatformReader(std::string file) : file_(std::move(file)) {}

  topo::Topology convert(const XmlElement& root) {
    if (root.name != "platform")
      fail(root, "the root element is <" + root.name + ">: a SimGrid platform file has <platform>");
    allow(root, {"version"});
    const std::string version = attr(root, "version");
    if (version != "4.1")
      fail(root, "platform version \"" + version +
                     "\": stragglesim reads version 4.1 (SimGrid 3.22 and later writes it)");
    const XmlElement* zone = nullptr;
    for (const XmlElement& c : root.children) {
      if (c.name != "zone" && c.name != "cluster") unsupported(c);
      if (zone != nullptr)
        fail(c,
             "a second top-level <" + c.name + ">: stragglesim reads one Full zone or one cluster");
      zone = &c;
    }
    if (zone == nullptr) fail(root, "the platform has no <zone> (or <cluster>)");
    if (zone->name == "cluster") {
      cluster(*zone);
      return build(*zone);
    }
    allow(*zone, {"id", "routing"});
    zone_id_ = attr(*zone, "id");
    const std::string routing = attr(*zone, "routing");
    if (routing != "Full") {
      fail(*zone, "routing=\"" + routing +
                      "\": stragglesim reads Full zones, whose routes are all written out (" +
                      routing + " computes routes by SimGrid's own rules)");
    }
    for (const XmlElement& c : zone->children) {
      if (c.name == "host")
        host(c);
      else if (c.name == "link")
        link(c);
      else if (c.name == "route")
        route(c);
      else
        unsupported(c);
    }
    return build(*zone);
  }

 private:
  [[noreturn]] void fail(const XmlElement& e, const std::string& what) const {
    throw InputError(file_ + ":" + std::to_string(e.line) + ": <" + e.name + ">: " + what);
  }
  [[noreturn]] void unsupported(const XmlElement& e) const {
    std::string why =
        "is not read by stragglesim; a platform it reads is one <zone routing=\"Full\"> of <host>, "
        "<link> and <route> (with <link_ctn>) elements, or one <cluster>";
    if (e.name == "cluster")
      why =
          "a cluster inside a zone is not read: give the cluster as the platform's only "
          "element, or write its hosts, links and routes in the Full zone";
    if (e.name == "zone" || e.name == "AS") why = "nested zones are not read: write one Full zone";
    if (e.name == "prop")
      why = "properties are not read (they configure SimGrid's plugins and models)";
    if (e.name == "config")
      why =
          "SimGrid's configuration is not read (stragglesim's flow model has no TCP or latency "
          "factors; see the user guide)";
    fail(e, why);
  }
  void allow(const XmlElement& e, std::initializer_list<const char*> keys) const {
    for (const auto& attribute : e.attributes) {
      // Not a structured binding: clang 14 refuses one captured by a lambda.
      const std::string& k = attribute.first;
      if (std::find_if(keys.begin(), keys.end(), [&](const char* a) { return k == a; }) ==
          keys.end()) {
        std::string list;
        for (const char* a : keys) list += (list.empty() ? "" : ", ") + std::string(a);
        std::string why = "attribute " + k + " is not read (allowed: " + list + ")";
        if (k.find("file") != std::string::npos)
          why += "; speed, bandwidth and state profiles are not modelled";
        fail(e, why);
      }
    }
  }
  const std::string* maybe(const XmlElement& e, const std::string& key) const {
    for (const auto& [k, v] : e.attributes)
      if (k == key) return &v;
    return nullptr;
  }
  std::string attr(const XmlElement& e, const std::string& key) const {
    const std::string* v = maybe(e, key);
    if (v == nullptr) fail(e, "attribute " + key + " is missing");
    if (v->empty()) fail(e, "attribute " + key + " is empty");
    return *v;
  }
  void no_children(const XmlElement& e) const {
    if (!e.children.empty()) unsupported(e.children.front());
  }

  void host(const XmlElement& e) {
    allow(e, {"id", "speed", "core"});
    no_children(e);
    declare_host(e, attr(e, "id"));
  }

  // A host (or a cluster's host) at `e`: its speed and core count are checked.
  void declare_host(const XmlElement& e, const std::string& id) {
    bool ok = false;
    const std::string speed = attr(e, "speed");
    const double s = value_with_unit(speed, {{"f", 1.0}, {"flops", 1.0}}, true, "f", ok);
    if (!ok || !(s > 0) || !std::isfinite(s))
      fail(e, "speed \"" + speed +
                  "\": a positive number of flops (e.g. 1Gf); pstate lists are not read");
    if (const std::string* core = maybe(e, "core")) {
      int c = 0;
      const auto [end, ec] = std::from_chars(core->data(), core->data() + core->size(), c);
      if (ec != std::errc() || end != core->data() + core->size() || c < 1)
        fail(e, "core \"" + *core + "\": a positive integer");
    }
    if (host_index_.count(id) != 0)
      fail(e, "host " + id + " is declared twice (first at line " +
                  std::to_string(host_lines_[static_cast<std::size_t>(host_index_[id])]) + ")");
    host_index_[id] = static_cast<int>(hosts_.size());
    hosts_.push_back(id);
    host_lines_.push_back(e.line);
  }

  void link(const XmlElement& e) {
    allow(e, {"id", "bandwidth", "latency", "sharing_policy"});
    no_children(e);
    const std::string* policy = maybe(e, "sharing_policy");
    declare_link(e, attr(e, "id"), attr(e, "bandwidth"), maybe(e, "latency"),
                 policy == nullptr ? "SHARED" : *policy);
  }

  // A link (or a cluster's link) at `e`, from its attributes' text.
  void declare_link(const XmlElement& e, const std::string& id, const std::string& bw_text,
                    const std::string* latency, const std::string& p) {
    if (links_.count(id) != 0) fail(e, "link " + id + " is declared twice");
    bool ok = false;
    const double bw = value_with_unit(bw_text, {{"bps", 0.125}, {"Bps", 1.0}}, true, "Bps", ok);
    if (!ok || !(bw > 0) || !std::isfinite(bw))
      fail(e, "bandwidth \"" + bw_text +
                  "\": a positive number with SimGrid's unit: Bps or bps, with a prefix k M G T "
                  "... (x1000) or Ki Mi Gi ... (x1024), e.g. 10GBps, 100Gbps");
    double lat = 0;
    if (const std::string* l = latency) {
      lat = value_with_unit(*l,
                            {{"w", 604800.0},
                             {"d", 86400.0},
                             {"h", 3600.0},
                             {"m", 60.0},
                             {"s", 1.0},
                             {"ms", 1e-3},
                             {"us", 1e-6},
                             {"ns", 1e-9},
                             {"ps", 1e-12}},
                            false, "s", ok);
      if (!ok || !(lat >= 0))
        fail(e, "latency \"" + *l +
                    "\": a number >= 0 with SimGrid's unit: s, ms, us, ns, ps (or m, h, d, w), "
                    "e.g. 50us");
      if (lat > 1.0) fail(e, "latency \"" + *l + "\" is above 1 s (surely a unit mistake)");
    }
    LinkDecl d;
    d.line = e.line;
    if (p == "SHARED") {
      d.shared = static_cast<int>(resources_.size());
      resources_.push_back(Resource{id, "", e.line, bw, lat, 0});
    } else if (p == "SPLITDUPLEX") {
      d.up = static_cast<int>(resources_.size());
      resources_.push_back(Resource{id, "_UP", e.line, bw, lat, 0});
      d.down = static_cast<int>(resources_.size());
      resources_.push_back(Resource{id, "_DOWN", e.line, bw, lat, 0});
    } else if (p == "FATPIPE") {
      fail(e,
           "sharing_policy=\"FATPIPE\" (every flow gets the whole bandwidth, none shares it) has "
           "no stragglesim equivalent: its links are shared max-min; use SHARED or SPLITDUPLEX");
    } else {
      fail(e,
           "sharing_policy=\"" + p +
               "\" is not read (SHARED: one capacity, crossed one way; SPLITDUPLEX: one each way)");
    }
    links_[id] = d;
  }

  // <cluster> (SimGrid's FLAT cluster): hosts PREFIX n SUFFIX for n in `radical` (in that
  // order), each with its private link ID_link_n (bw, lat; SPLITDUPLEX unless sharing_policy
  // says otherwise), and, with bb_bw, the backbone ID_backbone (bb_bw, bb_lat; SHARED unless
  // bb_sharing_policy says otherwise). The route from host i to host j: i's link UP, the
  // backbone, j's link DOWN. So the hosts hang off one switch, and a backbone is one link
  // between the switch's up and down sides, crossed by all traffic in one direction.
  void cluster(const XmlElement& e) {
    allow(e, {"id", "prefix", "suffix", "radical", "speed", "core", "bw", "lat", "sharing_policy",
              "bb_bw", "bb_lat", "bb_sharing_policy", "topology"});
    no_children(e);
    zone_id_ = attr(e, "id");
    if (const std::string* t = maybe(e, "topology"); t != nullptr && *t != "FLAT") {
      fail(e, "topology=\"" + *t +
                  "\": stragglesim reads FLAT clusters (a private link per host "
                  "and an optional backbone)");
    }
    const std::string* prefix = maybe(e, "prefix");
    const std::string* suffix = maybe(e, "suffix");
    std::vector<int> numbers;
    const std::string radical = attr(e, "radical");
    std::size_t at = 0;
    while (at <= radical.size()) {
      const std::size_t comma = std::min(radical.find(',', at), radical.size());
      const std::string item = radical.substr(at, comma - at);
      const std::size_t dash = item.find('-');
      int lo = -1;
      int hi = -1;
      auto number = [&](const std::string& text, int& out) {
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
        return ec == std::errc() && end == text.data() + text.size() && !text.empty() && out >= 0;
      };
      const bool good = dash == std::string::npos
                            ? number(item, lo) && number(item, hi)
                            : number(item.substr(0, dash), lo) && number(item.substr(dash + 1), hi);
      if (!good || lo > hi) {
        fail(e, "radical=\"" + radical + "\": numbers and ranges a-b, separated by commas");
      }
      // The range's length and the hosts so far, checked (common/checked.hpp): hi - lo + 1 of
      // 0-2147483647 is past an int, and a loop `n <= hi` never ends at hi = INT_MAX.
      const auto length = checked_add<long long>(static_cast<long long>(hi) - lo, 1, "radical");
      if (checked_add<long long>(static_cast<long long>(numbers.size()), length, "radical") >
          1024) {
        fail(e, "radical=\"" + radical + "\": at most 1024 hosts in a cluster");
      }
      for (long long n = lo; n <= hi; ++n) numbers.push_back(static_cast<int>(n));
      at = comma + 1;
    }
    const std::string* policy = maybe(e, "sharing_policy");
    std::vector<LinkDecl> private_links;
    for (int n : numbers) {
      const std::string name =
          (prefix ? *prefix : "") + std::to_string(n) + (suffix ? *suffix : "");
      declare_host(e, name);
      const std::string link = zone_id_ + "_link_" + std::to_string(n);
      declare_link(e, link, attr(e, "bw"), maybe(e, "lat"),
                   policy == nullptr ? "SPLITDUPLEX" : *policy);
      private_links.push_back(links_[link]);
    }
    std::vector<int> backbone;
    if (maybe(e, "bb_bw") != nullptr) {
      const std::string* bb_policy = maybe(e, "bb_sharing_policy");
      const std::string id = zone_id_ + "_backbone";
      declare_link(e, id, attr(e, "bb_bw"), maybe(e, "bb_lat"),
                   bb_policy == nullptr ? "SHARED" : *bb_policy);
      const LinkDecl& bb = links_[id];
      if (bb.shared < 0) {
        fail(e, "bb_sharing_policy=\"" + *bb_policy +
                    "\": a cluster's backbone is crossed one way by all traffic, as one SHARED "
                    "link");
      }
      backbone.push_back(bb.shared);
    } else if (maybe(e, "bb_lat") != nullptr || maybe(e, "bb_sharing_policy") != nullptr) {
      fail(e, "bb_lat and bb_sharing_policy need bb_bw (the backbone)");
    }
    const int count = static_cast<int>(numbers.size());
    for (int i = 0; i < count; ++i) {
      for (int j = 0; j < count; ++j) {
        if (i == j) continue;
        const LinkDecl& a = private_links[static_cast<std::size_t>(i)];
        const LinkDecl& b = private_links[static_cast<std::size_t>(j)];
        if (a.shared >= 0) {
          fail(e, "sharing_policy=\"" + *policy +
                      "\": every host's private link is crossed both ways (up to send, down to "
                      "receive), one capacity for both, which stragglesim's links cannot be; use "
                      "SPLITDUPLEX");
        }
        RouteUse r{i, j, {a.up}, e.line, false};
        r.resources.insert(r.resources.end(), backbone.begin(), backbone.end());
        r.resources.push_back(b.down);
        add_route(e, std::move(r));
      }
    }
  }

  void route(const XmlElement& e) {
    allow(e, {"src", "dst", "symmetrical"});
    const std::string src = attr(e, "src");
    const std::string dst = attr(e, "dst");
    auto host_of = [&](const std::string& name, const char* key) {
      const auto it = host_index_.find(name);
      if (it == host_index_.end())
        fail(e, std::string(key) + " \"" + name +
                    "\" is not a host declared above (routers and zones are not read)");
      return it->second;
    };
    const int s = host_of(src, "src");
    const int d = host_of(dst, "dst");
    if (s == d) fail(e, "a route from host " + src + " to itself (a rank never sends to itself)");
    const std::string* sym = maybe(e, "symmetrical");
    bool symmetrical = true;
    if (sym != nullptr) {
      if (*sym == "NO" || *sym == "no")
        symmetrical = false;
      else if (*sym != "YES" && *sym != "yes")
        fail(e, "symmetrical=\"" + *sym + "\": YES or NO");
    }
    RouteUse forward{s, d, {}, e.line, false};
    RouteUse back{d, s, {}, e.line, true};
    if (e.children.empty()) fail(e, "a route needs at least one <link_ctn>");
    for (const XmlElement& c : e.children) {
      if (c.name != "link_ctn") unsupported(c);
      allow(c, {"id", "direction"});
      no_children(c);
      const std::string id = attr(c, "id");
      const auto it = links_.find(id);
      if (it == links_.end()) fail(c, "link " + id + " is not declared above");
      const LinkDecl& l = it->second;
      const std::string* dir = maybe(c, "direction");
      const std::string direction = dir == nullptr ? "NONE" : *dir;
      if (direction != "UP" && direction != "DOWN" && direction != "NONE")
        fail(c, "direction=\"" + direction + "\": UP, DOWN or NONE");
      if (l.shared >= 0) {
        if (direction != "NONE")
          fail(c, "direction=\"" + direction + "\" on SHARED link " + id + " (line " +
                      std::to_string(l.line) + "): directions select a half of a SPLITDUPLEX link");
        if (symmetrical) {
          fail(c,
               "the symmetrical route " + src + " <-> " + dst + " crosses SHARED link " + id +
                   " (line " + std::to_string(l.line) +
                   ") both ways: a SHARED link is one capacity for both directions, which "
                   "stragglesim's links (one capacity per direction) cannot be; make the link "
                   "SPLITDUPLEX (direction=\"UP\"/\"DOWN\" here) or the route symmetrical=\"NO\"");
        }
        forward.resources.push_back(l.shared);
      } else {
        if (direction == "NONE")
          fail(c, "SPLITDUPLEX link " + id + " (line " + std::to_string(l.line) +
                      ") needs direction=\"UP\" or \"DOWN\"");
        forward.resources.push_back(direction == "UP" ? l.up : l.down);
        back.resources.push_back(direction == "UP" ? l.down : l.up);
      }
    }
    std::reverse(back.resources.begin(), back.resources.end());
    add_route(e, std::move(forward));
    if (symmetrical) add_route(e, std::move(back));
  }

  void add_route(const XmlElement& e, RouteUse r) {
    const auto key = std::make_pair(r.src, r.dst);
    const auto [it, inserted] = route_lines_.emplace(key, e.line);
    if (!inserted) {
      fail(e, "a second route from " + hosts_[static_cast<std::size_t>(r.src)] + " to " +
                  hosts_[static_cast<std::size_t>(r.dst)] + " (the first at line " +
                  std::to_string(it->second) + ")");
    }
    for (int res : r.resources) {
      Resource& x = resources_[static_cast<std::size_t>(res)];
      if (x.first_route_line == 0) x.first_route_line = e.line;
    }
    routes_.push_back(std::move(r));
  }

  // Union-find over points: hosts 0..H-1, then the start and end of every resource.
  int find(int p) {
    while (parent_[static_cast<std::size_t>(p)] != p) {
      parent_[static_cast<std::size_t>(p)] =
          parent_[static_cast<std::size_t>(parent_[static_cast<std::size_t>(p)])];
      p = parent_[static_cast<std::size_t>(p)];
    }
    return p;
  }
  void unite(int a, int b, const RouteUse& r) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    const int ha = host_at_[static_cast<std::size_t>(a)];
    const int hb = host_at_[static_cast<std::size_t>(b)];
    if (ha >= 0 && hb >= 0) {
      throw InputError(
          file_ + ":" + std::to_string(r.line) + ": <route>: " + describe(r) +
          ": with the routes before it, this route puts hosts " +
          hosts_[static_cast<std::size_t>(ha)] + " and " + hosts_[static_cast<std::size_t>(hb)] +
          " at one point of the network (each link has one start and one end, and routes meet "
          "where one link ends and the next starts; a SHARED link crossed both ways does this)");
    }
    parent_[static_cast<std::size_t>(b)] = a;
    if (ha < 0) host_at_[static_cast<std::size_t>(a)] = hb;
  }
  std::string resource_name(int res) const {
    const Resource& x = resources_[static_cast<std::size_t>(res)];
    return x.link + (x.suffix == "_UP" ? " UP" : x.suffix == "_DOWN" ? " DOWN" : "");
  }
  std::string describe(const RouteUse& r) const {
    return std::string(r.reverse ? "the reverse of the route, " : "the route ") +
           hosts_[static_cast<std::size_t>(r.src)] + " -> " +
           hosts_[static_cast<std::size_t>(r.dst)];
  }
  std::string list(const std::vector<int>& resources, const std::vector<int>& to_resource) const {
    std::string s;
    for (int x : resources)
      s += (s.empty() ? "" : ", ") +
           resource_name(to_resource.empty() ? x : to_resource[static_cast<std::size_t>(x)]);
    return "[" + s + "]";
  }

  topo::Topology build(const XmlElement& zone) {
    const int h = static_cast<int>(hosts_.size());
    if (h < 2) fail(zone, "a platform of " + std::to_string(h) + " hosts: at least 2 are needed");
    if (h > topo::kMaxGeneratedRanks)
      fail(zone, std::to_string(h) + " hosts: at most " + std::to_string(topo::kMaxGeneratedRanks) +
                     ", as for every topology");
    const int points = h + 2 * static_cast<int>(resources_.size());
    parent_.resize(static_cast<std::size_t>(points));
    std::iota(parent_.begin(), parent_.end(), 0);
    host_at_.assign(static_cast<std::size_t>(points), -1);
    for (int i = 0; i < h; ++i) host_at_[static_cast<std::size_t>(i)] = i;
    auto tail = [&](int res) { return h + 2 * res; };
    auto head = [&](int res) { return h + 2 * res + 1; };
    for (const RouteUse& r : routes_) {
      unite(r.src, tail(r.resources.front()), r);
      for (std::size_t i = 0; i + 1 < r.resources.size(); ++i)
        unite(head(r.resources[i]), tail(r.resources[i + 1]), r);
      unite(head(r.resources.back()), r.dst, r);
    }
    std::vector<bool> routed(static_cast<std::size_t>(h), false);
    for (const RouteUse& r : routes_)
      routed[static_cast<std::size_t>(r.src)] = routed[static_cast<std::size_t>(r.dst)] = true;
    for (int i = 0; i < h; ++i) {
      if (!routed[static_cast<std::size_t>(i)]) {
        throw InputError(file_ + ":" + std::to_string(host_lines_[static_cast<std::size_t>(i)]) +
                         ": <host>: host " + hosts_[static_cast<std::size_t>(i)] +
                         " is in no route: nothing could reach it");
      }
    }
    topo::Topology t;
    std::vector<int> vertex(static_cast<std::size_t>(points), -1);
    for (int i = 0; i < h; ++i)
      vertex[static_cast<std::size_t>(find(i))] = t.add_gpu(hosts_[static_cast<std::size_t>(i)]);
    int switches = 0;
    auto vertex_of = [&](int point) {
      const int root = find(point);
      int& v = vertex[static_cast<std::size_t>(root)];
      if (v < 0) {
        std::string name = "switch" + std::to_string(switches++);
        while (t.find_vertex(name) >= 0) name = "_" + name;
        v = t.add_switch(name);
      }
      return v;
    };
    std::vector<int> link_of(resources_.size(), -1);
    std::vector<int> resource_of;
    for (std::size_t res = 0; res < resources_.size(); ++res) {
      const Resource& x = resources_[res];
      if (x.first_route_line == 0) continue;  // in no route: nothing crosses it
      const int a = vertex_of(tail(static_cast<int>(res)));
      const int b = vertex_of(head(static_cast<int>(res)));
      if (a == b) {
        throw InputError(file_ + ":" + std::to_string(x.first_route_line) + ": <route>: link " +
                         resource_name(static_cast<int>(res)) + " (line " + std::to_string(x.line) +
                         ") would end where it starts: the routes cross it both ways or around a "
                         "loop (a SHARED link crossed both ways: make it SPLITDUPLEX)");
      }
      link_of[res] = t.add_link(a, b, BytesPerSecond{x.bandwidth}, Seconds{x.latency}, x.link);
      resource_of.push_back(static_cast<int>(res));
    }
    for (const RouteUse& r : routes_) {
      std::vector<int> declared;
      for (int res : r.resources) declared.push_back(link_of[static_cast<std::size_t>(res)]);
      const topo::Route ours = t.route(r.src, r.dst);
      if (ours.links != declared) {
        throw InputError(
            file_ + ":" + std::to_string(r.line) + ": <route>: " + describe(r) + " takes " +
            list(r.resources, {}) +
            ", but on the network the routes describe stragglesim routes it over " +
            list(ours.links, resource_of) +
            " (lowest total latency, then fewest hops, then lowest link ids; SimGrid's Full zone "
            "takes the route as written): stragglesim cannot follow this route");
      }
    }
    t.name = "simgrid(" + std::to_string(h) + ")";
    t.description = "from SimGrid platform " + file_ + " [zone " + zone_id_ + ": " +
                    std::to_string(h) + " hosts, " + std::to_string(switches) + " switches, " +
                    std::to_string(t.link_count()) + " directed links]";
    return t;
  }

  struct LinkDecl {
    int shared = -1;
    int up = -1;
    int down = -1;
    int line = 0;
  };
  std::string file_;
  std::string zone_id_;
  std::vector<std::string> hosts_;
  std::vector<int> host_lines_;
  std::map<std::string, int> host_index_;
  std::map<std::string, LinkDecl> links_;
  std::vector<Resource> resources_;
  std::vector<RouteUse> routes_;
  std::map<std::pair<int, int>, int> route_lines_;
  std::vector<int> parent_;
  std::vector<int> host_at_;
};

}  // namespace

topo::Topology simgrid_platform(std::string_view text, const std::string& name) {
  XmlReader reader(text, name);
  const XmlElement root = reader.document();
  return PlatformReader(name).convert(root);
}

topo::Topology simgrid_platform_file(const std::string& path) {
  return simgrid_platform(read_input_file(path), path);
}

bool is_simgrid_platform_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char buf[512] = {};
  in.read(buf, sizeof buf);
  std::string_view head(buf, static_cast<std::size_t>(in.gcount()));
  if (head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && head[first] == '<';
}

topo::Topology load_simgrid_platform(const ConfigNode& entry, const std::string& base_dir) {
  entry.allow_only({"simgrid"});
  const std::string path = entry.child("simgrid").as_input_file(base_dir, "SimGrid platform file");
  return simgrid_platform_file(path);
}

}  // namespace ssim::experiments
