// Keyspace's default SCAN, INFO keyspace figures and slot count, for hosts
// without an index of their keys (each costs a pass over Keys()), and SCAN's
// order of keys.
#include "tools/commands/keyspace.h"

#include <algorithm>
#include <utility>

#include "shardfilter/filters/hash.h"
#include "tools/commands/key_slot.h"

namespace shardfilter::commands {

uint64_t ScanOrder(std::string_view key) {
  return (HashKey(key, 0x5343414e) >> 2) + 1;  // in [1, 2^62]
}

ScanPage Keyspace::Scan(uint64_t cursor, size_t count) {
  std::vector<std::pair<uint64_t, std::string>> order;
  for (std::string& k : Keys()) {
    const uint64_t h = ScanOrder(k);
    if (h >= cursor) order.emplace_back(h, std::move(k));
  }
  std::sort(order.begin(), order.end());
  count = std::max<size_t>(count, 1);  // every call makes progress
  ScanPage page;
  for (size_t i = 0; i < order.size(); ++i) {
    if (page.visited >= count && order[i].first != order[i - 1].first) {
      page.next = order[i].first;
      break;
    }
    ++page.visited;
    page.keys.push_back(std::move(order[i].second));
  }
  return page;
}

KeyspaceFigures Keyspace::Figures() {
  KeyspaceFigures f;
  f.keys = Size();
  return f;
}

uint64_t Keyspace::CountInSlot(uint16_t slot) {
  uint64_t n = 0;
  for (const std::string& k : Keys()) n += KeySlot(k) == slot ? 1 : 0;
  return n;
}

}  // namespace shardfilter::commands
