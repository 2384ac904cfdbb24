// Redis Cluster's key -> hash slot mapping (the cluster specification's
// HASH_SLOT): CRC16 (XMODEM: polynomial 0x1021, initial value 0, no
// reflection, no final xor) of the key modulo 16384. When the key holds a
// '{' followed later by a '}' with at least one byte between them, only the
// bytes between the first '{' and the first '}' after it are hashed (a hash
// tag: "{user1000}.following" and "{user1000}.followers" share a slot);
// "{}" and an unclosed '{' hash the whole key.
//
// Thread safety: pure functions.
#ifndef SHARDFILTER_TOOLS_COMMANDS_KEY_SLOT_H_
#define SHARDFILTER_TOOLS_COMMANDS_KEY_SLOT_H_

#include <cstdint>
#include <string_view>

namespace shardfilter::commands {

inline constexpr uint32_t kClusterSlots = 16384;

// CRC16/XMODEM of bytes ("123456789" -> 0x31C3).
uint16_t Crc16(std::string_view bytes);

// The hash slot of key, 0..16383.
uint16_t KeySlot(std::string_view key);

}  // namespace shardfilter::commands

#endif  // SHARDFILTER_TOOLS_COMMANDS_KEY_SLOT_H_
