// A filter's create is as durable as its durability mode promises, and no
// more at the cost of an fsync each: a filter of durability sync syncs its
// descriptor before Create returns; journal and none write it to RocksDB's
// log unsynced (it survives a process crash; a power loss may take it only
// with every later write, since the log keeps its order and any later
// synced write syncs it too).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "fault_fs.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/persistence/test_env.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::Key;
using testing::MustOpen;
using testing::Spec;
using testing::TempDir;

using testing::EnvScope;

// Every sync of RocksDB's log fails: creates that need none succeed.
TEST(CreateDurabilityTest, JournalAndNoneCreatesDoNotSyncTheLog) {
  TempDir dir;
  testing::FaultEnv fe;
  EnvScope scope(fe);
  auto db = MustOpen(testing::Options(dir.db()));
  ASSERT_NE(db, nullptr);
  fe.fs->FailSyncs(".log");
  for (int i = 0; i < 20; ++i) {
    auto f = db->Create("j" + std::to_string(i),
                        Spec(FilterType::kBloom, 500, 1, Durability::kJournal));
    ASSERT_TRUE(f.ok()) << i << ": " << f.status().ToString();
    SF_ASSERT_OK((*f)->Add(Key(i, 0)));
  }
  auto none =
      db->Create("n", Spec(FilterType::kCuckoo, 500, 1, Durability::kNone));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  // A filter of durability sync still syncs its descriptor: refused here,
  // and nothing of it exists.
  auto sync =
      db->Create("s", Spec(FilterType::kBloom, 500, 1, Durability::kSync));
  EXPECT_EQ(sync.status().code(), StatusCode::kIOError)
      << sync.status().ToString();
  fe.fs->FailSyncs("");
  EXPECT_TRUE(db->Get("s").status().IsNotFound());
  // A failed log sync leaves RocksDB in its background-error state
  // (Store::Write): what Close then writes is not this test's subject.
  (void)db->Close();
}

// A deadline is as durable as the filter's adds: EXPIRE and PERSIST of a
// journal filter, loaded or not yet loaded, need no log sync; a sync
// filter's still syncs (refused here, and its deadline unchanged).
TEST(CreateDurabilityTest, ExpiryChangesFollowTheFilterDurability) {
  TempDir dir;
  testing::FaultEnv fe;
  EnvScope scope(fe);
  {
    auto db = MustOpen(testing::Options(dir.db()));
    ASSERT_NE(db, nullptr);
    for (const char* name : {"loaded", "unloaded"}) {
      ASSERT_TRUE(db->Create(name, Spec(FilterType::kBloom, 500, 1,
                                        Durability::kJournal))
                      .ok());
    }
    ASSERT_TRUE(
        db->Create("s", Spec(FilterType::kBloom, 500, 1, Durability::kSync))
            .ok());
    SF_ASSERT_OK(db->Close());
  }
  auto db = MustOpen(testing::Options(dir.db()));
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->Get("loaded").ok());
  fe.fs->FailSyncs(".log");
  for (const char* name : {"loaded", "unloaded"}) {
    SF_ASSERT_OK(db->SetExpiry(name, 4102444800000));
    EXPECT_EQ(db->Expiry(name), std::optional<int64_t>(4102444800000)) << name;
    SF_ASSERT_OK(db->SetExpiry(name, std::nullopt));
    EXPECT_EQ(db->Expiry(name), std::nullopt) << name;
    SF_ASSERT_OK(db->SetExpiry(name, 4102444800001));
  }
  Status st = db->SetExpiry("s", 4102444800000);
  EXPECT_EQ(st.code(), StatusCode::kIOError) << st.ToString();
  EXPECT_EQ(db->Expiry("s"), std::nullopt);
  fe.fs->FailSyncs("");
  (void)db->Close();
}

// After a power loss the store holds a prefix of the creates in log order:
// those before a later synced write (here a filter of durability sync)
// are all there, and the store opens clean whatever was lost.
TEST(CreateDurabilityTest, APowerLossKeepsEveryCreateBeforeALaterSync) {
  TempDir dir;
  {
    testing::FaultEnv fe;
    EnvScope scope(fe);
    auto db = MustOpen(testing::Options(dir.db()));
    ASSERT_NE(db, nullptr);
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(
          db->Create("before" + std::to_string(i),
                     Spec(FilterType::kBloom, 500, 1, Durability::kJournal))
              .ok());
    }
    ASSERT_TRUE(db->Create("synced",
                           Spec(FilterType::kBloom, 500, 1, Durability::kSync))
                    .ok());
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(
          db->Create("after" + std::to_string(i),
                     Spec(FilterType::kBloom, 500, 1, Durability::kJournal))
              .ok());
    }
    fe.fs->PowerOff();
    (void)db->Close();
    db.reset();
    fe.fs->DropUnsyncedData();
  }
  auto db = MustOpen(testing::Options(dir.db()));
  ASSERT_NE(db, nullptr);
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(db->Get("before" + std::to_string(i)).ok()) << i;
  }
  EXPECT_TRUE(db->Get("synced").ok());
  EXPECT_TRUE(db->Unavailable().empty());
  auto report = db->Verify();
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << report->problems[0];
  SF_ASSERT_OK(db->Close());
}

}  // namespace
}  // namespace shardfilter
