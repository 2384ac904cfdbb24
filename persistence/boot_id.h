// The id of the running boot, which journals record so that a reader can
// tell whether the page cache it wrote through has survived (a reboot may
// have lost unsynced pages; a process crash cannot).
#ifndef SHARDFILTER_PERSISTENCE_BOOT_ID_H_
#define SHARDFILTER_PERSISTENCE_BOOT_ID_H_

#include <string>

namespace shardfilter::persistence {

// /proc/sys/kernel/random/boot_id without its newline; empty where there is
// none. Tests replace it to act out a reboot; "" restores it.
std::string CurrentBootId();
void SetBootIdForTesting(std::string id);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_BOOT_ID_H_
