#include "shardfilter/engine/internal/journal_sink.h"

namespace shardfilter::internal {

Status StoreJournalSink::Write(persistence::JournalBatch* batch, bool sync) {
  Status s = store()->WriteJournal(batch, sync);
  if (s.ok()) Counted(batch->hashes());
  return s;
}

Result<uint64_t> StoreJournalSink::JournalEpoch(std::string_view filter) {
  return store()->GetFilterJournalEpoch(filter);
}

Status StoreJournalSink::PutJournalEpoch(std::string_view filter,
                                         uint64_t epoch) {
  return store()->PutFilterJournalEpoch(filter, epoch);
}

}  // namespace shardfilter::internal
