#include "recipe/key_places.hpp"

#include <algorithm>

#include "data/yaml_util.hpp"
#include "meshplan/diag.hpp"

namespace meshplan::recipe {
namespace {

// The value of `key` in the map `node`, or an undefined node (found by walking the map, so that
// nothing is inserted into it).
YAML::Node Child(const YAML::Node& node, const std::string& key) {
  for (const auto& kv : node) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) return kv.second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

// The map at the dotted `path` below `root`, or an undefined node when a step is absent or not a map.
YAML::Node MapAt(const YAML::Node& root, const std::string& path) {
  YAML::Node cur = root;
  size_t begin = 0;
  while (cur.IsMap() && begin < path.size()) {
    const size_t dot = std::min(path.find('.', begin), path.size());
    const YAML::Node next = Child(cur, path.substr(begin, dot - begin));
    cur.reset(next);
    begin = dot + 1;
  }
  return cur.IsMap() ? cur : YAML::Node(YAML::NodeType::Undefined);
}

// "distributed:", "ddp: or dist:", "ddp:, optimizer: or comm_overlap:".
std::string Sections(const std::vector<std::string>& homes) {
  std::string s;
  for (size_t i = 0; i < homes.size(); ++i) {
    s += (i == 0 ? "" : i + 1 == homes.size() ? " or " : ", ") + homes[i] + ":";
  }
  return s;
}

}  // namespace

void RefuseMisplacedKeys(const YAML::Node& root, const std::vector<std::string>& sections,
                         const std::vector<KeyPlace>& places, const std::string& filename, const std::string& note) {
  for (const std::string& section : sections) {
    const YAML::Node map = section.empty() ? (root.IsMap() ? root : YAML::Node()) : MapAt(root, section);
    if (!map.IsMap()) continue;
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) continue;
      const std::string& key = kv.first.Scalar();
      const auto place = std::find_if(places.begin(), places.end(), [&](const KeyPlace& p) { return p.key == key; });
      if (place == places.end()) continue;
      auto here = [&](const std::vector<std::string>& list) {
        return std::find(list.begin(), list.end(), section) != list.end();
      };
      if (here(place->homes) || here(place->also)) continue;
      throw InputError(yamlutil::LocOf(kv.first, filename), section.empty() ? key : section + "." + key,
                       "expected " + key + " under " + Sections(place->homes) + ", found it " +
                           (section.empty() ? std::string("at the top level") : "under " + section + ":") +
                           (note.empty() ? "" : "; " + note));
    }
  }
}

}  // namespace meshplan::recipe
