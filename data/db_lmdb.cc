// LMDB backend of the DB layer (compiled when CMake finds liblmdb: HALFCAF_WITH_LMDB).
// An LMDB is a folder holding data.mdb and lock.mdb; records come back in key order.
#include <lmdb.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/enforce.h"
#include "data/db.h"

namespace halfcaf {
namespace db {
namespace {

// Address space reserved for the map (not disk space): 1 TiB, as Caffe2 uses on 64-bit hosts.
constexpr size_t kMapSize = size_t{1} << 40;

void Check(int rc, const std::string& path, const char* what) {
  HALFCAF_ENFORCE(rc == MDB_SUCCESS, "lmdb DB '", path, "': ", what, " failed: ", mdb_strerror(rc));
}

class LMDBCursor final : public Cursor {
 public:
  LMDBCursor(MDB_env* env, const std::string& path) : path_(path) {
    Check(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn_), path_, "mdb_txn_begin");
    int rc = mdb_dbi_open(txn_, nullptr, 0, &dbi_);
    if (rc == MDB_SUCCESS) rc = mdb_cursor_open(txn_, dbi_, &cursor_);
    if (rc != MDB_SUCCESS) {
      mdb_txn_abort(txn_);
      Check(rc, path_, "opening a cursor");
    }
    SeekToFirst();
  }
  ~LMDBCursor() override {
    mdb_cursor_close(cursor_);
    mdb_txn_abort(txn_);
  }
  void SeekToFirst() override { Get(MDB_FIRST); }
  void Next() override { Get(MDB_NEXT); }
  bool Valid() const override { return valid_; }
  std::string key() const override {
    return std::string(static_cast<const char*>(key_.mv_data), key_.mv_size);
  }
  std::string value() const override {
    return std::string(static_cast<const char*>(value_.mv_data), value_.mv_size);
  }

 private:
  void Get(MDB_cursor_op op) {
    const int rc = mdb_cursor_get(cursor_, &key_, &value_, op);
    if (rc == MDB_NOTFOUND) {
      valid_ = false;
      return;
    }
    Check(rc, path_, "reading a record");
    valid_ = true;
  }

  std::string path_;
  MDB_txn* txn_ = nullptr;
  MDB_dbi dbi_ = 0;
  MDB_cursor* cursor_ = nullptr;
  MDB_val key_{}, value_{};
  bool valid_ = false;
};

class LMDBTransaction final : public Transaction {
 public:
  LMDBTransaction(MDB_env* env, const std::string& path) : env_(env), path_(path) { Begin(); }
  ~LMDBTransaction() override {
    if (txn_ == nullptr) return;
    if (mdb_txn_commit(txn_) != MDB_SUCCESS) {
      // Already freed by the failed commit; an explicit Commit() reports such errors.
    }
  }
  void Put(const std::string& key, const std::string& value) override {
    MDB_val k{key.size(), const_cast<char*>(key.data())};
    MDB_val v{value.size(), const_cast<char*>(value.data())};
    Check(mdb_put(txn_, dbi_, &k, &v, 0), path_, "mdb_put");
  }
  void Commit() override {
    MDB_txn* txn = txn_;
    txn_ = nullptr;
    Check(mdb_txn_commit(txn), path_, "mdb_txn_commit");
    Begin();
  }

 private:
  void Begin() {
    Check(mdb_txn_begin(env_, nullptr, 0, &txn_), path_, "mdb_txn_begin");
    const int rc = mdb_dbi_open(txn_, nullptr, 0, &dbi_);
    if (rc != MDB_SUCCESS) {
      mdb_txn_abort(txn_);
      txn_ = nullptr;
      Check(rc, path_, "mdb_dbi_open");
    }
  }

  MDB_env* env_;
  std::string path_;
  MDB_txn* txn_ = nullptr;
  MDB_dbi dbi_ = 0;
};

class LMDB final : public DB {
 public:
  LMDB(const std::string& path, Mode mode) : path_(path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const bool exists = fs::exists(path, ec);
    if (mode == Mode::READ) {
      HALFCAF_ENFORCE(exists, "cannot open lmdb DB '", path, "': no such file or directory");
      HALFCAF_ENFORCE(fs::exists(fs::path(path) / "data.mdb", ec), "cannot open lmdb DB '", path,
                      "': ", fs::is_directory(path, ec) ? "the folder holds no data.mdb"
                                                        : "not an LMDB folder");
    } else {
      HALFCAF_ENFORCE(!(mode == Mode::NEW && exists), "cannot create lmdb DB '", path,
                      "': it already exists");
      if (!exists) {
        HALFCAF_ENFORCE(mkdir(path.c_str(), 0755) == 0, "cannot create lmdb DB '", path,
                        "': mkdir failed: ", std::strerror(errno));
      }
    }
    Check(mdb_env_create(&env_), path_, "mdb_env_create");
    int rc = mdb_env_set_mapsize(env_, kMapSize);
    if (rc == MDB_SUCCESS) {
      const unsigned flags = mode == Mode::READ ? (MDB_RDONLY | MDB_NOTLS) : 0;
      rc = mdb_env_open(env_, path.c_str(), flags, 0664);
    }
    if (rc != MDB_SUCCESS) {
      mdb_env_close(env_);
      env_ = nullptr;
      HALFCAF_THROW("cannot open lmdb DB '", path, "': ", mdb_strerror(rc));
    }
  }
  ~LMDB() override {
    if (env_ != nullptr) mdb_env_close(env_);
  }
  std::unique_ptr<Cursor> NewCursor() override {
    return std::make_unique<LMDBCursor>(env_, path_);
  }
  std::unique_ptr<Transaction> NewTransaction() override {
    return std::make_unique<LMDBTransaction>(env_, path_);
  }

 private:
  std::string path_;
  MDB_env* env_ = nullptr;
};

[[maybe_unused]] const bool g_registered = [] {
  RegisterDBType("lmdb", [](const std::string& path, Mode mode) {
    return std::unique_ptr<DB>(new LMDB(path, mode));
  });
  return true;
}();

}  // namespace
}  // namespace db
}  // namespace halfcaf
