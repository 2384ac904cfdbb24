#include "tools/commands/key_slot.h"

#include <array>

namespace shardfilter::commands {
namespace {

// One table entry per leading byte: the CRC of that byte shifted through
// the polynomial 8 times (MSB first).
constexpr std::array<uint16_t, 256> MakeTable() {
  std::array<uint16_t, 256> table{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint16_t crc = static_cast<uint16_t>(b << 8);
    for (int i = 0; i < 8; ++i) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021
                                                 : crc << 1);
    }
    table[b] = crc;
  }
  return table;
}

constexpr std::array<uint16_t, 256> kTable = MakeTable();

}  // namespace

uint16_t Crc16(std::string_view bytes) {
  uint16_t crc = 0;
  for (const char c : bytes) {
    const uint8_t index =
        static_cast<uint8_t>((crc >> 8) ^ static_cast<uint8_t>(c));
    crc = static_cast<uint16_t>((crc << 8) ^ kTable[index]);
  }
  return crc;
}

uint16_t KeySlot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return static_cast<uint16_t>(Crc16(key) & (kClusterSlots - 1));
}

}  // namespace shardfilter::commands
