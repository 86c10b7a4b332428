// The DB layer (data/db.h) and the operators CreateDB / TensorProtosDBInput, on every DB
// type this build has (LevelDB, LMDB; a type not compiled in is skipped), plus the errors.
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/net.h"
#include "core/operator.h"
#include "core/workspace.h"
#include "data/dataset_reader.h"
#include "data/db.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "/halfcaf_db_XXXXXX";
    path_ = mkdtemp(&tmpl[0]);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string Key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08d", i);
  return buf;
}

// Record i: image BYTE (1, 2, 3) with values 10 i + k, label INT32 scalar i, a FLOAT (2) tensor
// {i + 0.5, -i}.
std::string Record(int i) {
  TensorProtos protos;
  TensorProto* image = protos.add_protos();
  image->set_data_type(TensorProto::BYTE);
  for (int d : {1, 2, 3}) image->add_dims(d);
  std::string bytes;
  for (int k = 0; k < 6; ++k) bytes.push_back(static_cast<char>(10 * i + k));
  image->set_byte_data(bytes);
  TensorProto* label = protos.add_protos();
  label->set_data_type(TensorProto::INT32);
  label->add_int32_data(i);
  TensorProto* extra = protos.add_protos();
  extra->set_data_type(TensorProto::FLOAT);
  extra->add_dims(2);
  extra->add_float_data(i + 0.5f);
  extra->add_float_data(-static_cast<float>(i));
  std::string out;
  protos.SerializeToString(&out);
  return out;
}

void WriteDB(const std::string& type, const std::string& path,
             const std::vector<std::pair<std::string, std::string>>& records) {
  std::unique_ptr<db::DB> d = db::OpenDB(type, path, db::Mode::NEW);
  std::unique_ptr<db::Transaction> txn = d->NewTransaction();
  for (const auto& r : records) txn->Put(r.first, r.second);
  txn->Commit();
}

std::vector<std::pair<std::string, std::string>> Records(int n) {
  std::vector<std::pair<std::string, std::string>> out;
  for (int i = 0; i < n; ++i) out.emplace_back(Key(i), Record(i));
  return out;
}

OperatorDef CreateDBDef(const std::string& type, const std::string& path,
                        std::vector<Argument> extra = {}) {
  std::vector<Argument> args = {MakeArgument("db_type", type), MakeArgument("db", path)};
  for (auto& a : extra) args.push_back(a);
  return MakeOperatorDef("CreateDB", "", {}, {"reader"}, args);
}

OperatorDef InputDef(int64_t batch_size, std::vector<std::string> outputs = {"image", "label",
                                                                             "extra"},
                     bool no_prefetch = false) {
  std::vector<Argument> args = {MakeArgument("batch_size", batch_size)};
  if (no_prefetch) args.push_back(MakeArgument("no_prefetch", true));
  return MakeOperatorDef("TensorProtosDBInput", "", {"reader"}, outputs, args);
}

// The outputs' dims and bytes, or the error of the run, as one string (to compare runs).
std::string RunAndDescribe(OperatorBase* op, const Workspace& ws,
                           const std::vector<std::string>& outputs) {
  try {
    op->Run(0);
  } catch (const EnforceNotMet& e) {
    return std::string("error: ") + e.what();
  }
  std::string out;
  for (const auto& name : outputs) {
    const Tensor& t = ws.GetTensor(name);
    out += t.DebugString() + ":";
    out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  return out;
}

void ExpectThrows(const std::function<void()>& f, const std::vector<std::string>& substrs) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << substrs[0] << "'";
  } catch (const EnforceNotMet& e) {
    for (const auto& s : substrs) {
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos)
          << "'" << s << "' not in: " << e.what();
    }
  }
}

class DBTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!db::DBTypeAvailable(GetParam())) {
      GTEST_SKIP() << GetParam() << " is not compiled into this build";
    }
    path_ = dir_ / "db";
  }

  // CreateDB, then a TensorProtosDBInput op in ws_.
  std::unique_ptr<OperatorBase> Open(int64_t batch_size, std::vector<Argument> extra = {},
                                     std::vector<std::string> outputs = {"image", "label",
                                                                         "extra"}) {
    ws_.RunNetOnce(Net(CreateDBDef(GetParam(), path_, extra)));
    return CreateOperator(InputDef(batch_size, outputs), &ws_);
  }

  static NetDef Net(const OperatorDef& op) {
    NetDef net;
    net.set_name("init");
    *net.add_op() = op;
    return net;
  }

  // Checks that the outputs hold records `ids` stacked (batched) or record ids[0] alone.
  void ExpectBatch(const std::vector<int>& ids, bool batched) {
    const Tensor& image = ws_.GetTensor("image");
    const Tensor& label = ws_.GetTensor("label");
    const Tensor& extra = ws_.GetTensor("extra");
    const int64_t b = static_cast<int64_t>(ids.size());
    EXPECT_EQ(image.dtype(), DataType::UINT8);
    EXPECT_EQ(label.dtype(), DataType::INT32);
    EXPECT_EQ(extra.dtype(), DataType::FLOAT);
    if (batched) {
      EXPECT_EQ(image.dims(), (std::vector<int64_t>{b, 1, 2, 3}));
      EXPECT_EQ(label.dims(), (std::vector<int64_t>{b}));
      EXPECT_EQ(extra.dims(), (std::vector<int64_t>{b, 2}));
    } else {
      EXPECT_EQ(image.dims(), (std::vector<int64_t>{1, 2, 3}));
      EXPECT_EQ(label.dims(), (std::vector<int64_t>{}));
      EXPECT_EQ(extra.dims(), (std::vector<int64_t>{2}));
    }
    for (int64_t n = 0; n < b; ++n) {
      const int id = ids[n];
      for (int k = 0; k < 6; ++k) EXPECT_EQ(image.data<uint8_t>()[n * 6 + k], 10 * id + k);
      EXPECT_EQ(label.data<int32_t>()[n], id);
      EXPECT_EQ(extra.data<float>()[n * 2], id + 0.5f);
      EXPECT_EQ(extra.data<float>()[n * 2 + 1], -static_cast<float>(id));
    }
  }

  TempDir dir_;
  std::string path_;
  Workspace ws_;
};

TEST_P(DBTest, WritesAndReadsInKeyOrder) {
  // Written out of order; a cursor returns key order.
  WriteDB(GetParam(), path_, {{Key(2), "two"}, {Key(0), "zero"}, {Key(1), "one"}});
  std::unique_ptr<db::DB> d = db::OpenDB(GetParam(), path_, db::Mode::READ);
  std::unique_ptr<db::Cursor> c = d->NewCursor();
  std::vector<std::string> keys, values;
  for (c->SeekToFirst(); c->Valid(); c->Next()) {
    keys.push_back(c->key());
    values.push_back(c->value());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{Key(0), Key(1), Key(2)}));
  EXPECT_EQ(values, (std::vector<std::string>{"zero", "one", "two"}));
  c.reset();
  d.reset();
  // NEW refuses an existing DB; WRITE adds to it.
  ExpectThrows([&] { db::OpenDB(GetParam(), path_, db::Mode::NEW); }, {path_});
  {
    std::unique_ptr<db::DB> w = db::OpenDB(GetParam(), path_, db::Mode::WRITE);
    std::unique_ptr<db::Transaction> txn = w->NewTransaction();
    txn->Put(Key(3), "three");
    txn->Commit();
  }
  db::DBReader reader(GetParam(), path_);
  std::string key, value;
  for (int i = 0; i < 4; ++i) reader.Read(&key, &value);
  EXPECT_EQ(value, "three");
  reader.Read(&key, &value);  // wraps
  EXPECT_EQ(key, Key(0));
}

TEST_P(DBTest, ReadsBatchesAndWrapsAround) {
  WriteDB(GetParam(), path_, Records(5));
  auto op = Open(3);
  EXPECT_FALSE(ws_.GetBlob("reader")->IsTensor());
  op->Run(0);
  ExpectBatch({0, 1, 2}, true);
  op->Run(0);
  ExpectBatch({3, 4, 0}, true);  // past the end: continues at the first record
  op->Run(0);
  ExpectBatch({1, 2, 3}, true);
  // Re-running CreateDB reopens the DB: reading starts over.
  ws_.RunNetOnce(Net(CreateDBDef(GetParam(), path_)));
  op->Run(0);
  ExpectBatch({0, 1, 2}, true);
}

TEST_P(DBTest, BatchSizeZeroReadsOneRecordWithoutBatchAxis) {
  WriteDB(GetParam(), path_, Records(2));
  auto op = Open(0);
  for (int id : {0, 1, 0}) {
    op->Run(0);
    ExpectBatch({id}, false);
  }
}

TEST_P(DBTest, ShardsSplitTheRecords) {
  WriteDB(GetParam(), path_, Records(5));
  auto op = Open(4, {MakeArgument("num_shards", 2), MakeArgument("shard_id", 1)});
  op->Run(0);
  ExpectBatch({1, 3, 1, 3}, true);
}

TEST_P(DBTest, TwoOutputsOfATwoTensorRecord) {
  // Records as make_mnist_db writes them: image (28, 28, 1) BYTE and a scalar INT32 label.
  std::vector<std::pair<std::string, std::string>> recs;
  for (int i = 0; i < 3; ++i) {
    TensorProtos p;
    TensorProto* img = p.add_protos();
    img->set_data_type(TensorProto::BYTE);
    for (int d : {28, 28, 1}) img->add_dims(d);
    img->set_byte_data(std::string(784, static_cast<char>(i + 1)));
    TensorProto* lab = p.add_protos();
    lab->set_data_type(TensorProto::INT32);
    lab->add_int32_data(7 - i);
    recs.emplace_back(Key(i), p.SerializeAsString());
  }
  WriteDB(GetParam(), path_, recs);
  auto op = Open(4, {}, {"data_uint8", "label"});
  op->Run(0);
  const Tensor& data = ws_.GetTensor("data_uint8");
  ASSERT_EQ(data.dims(), (std::vector<int64_t>{4, 28, 28, 1}));
  ASSERT_EQ(data.dtype(), DataType::UINT8);
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(data.data<uint8_t>()[n * 784], n % 3 + 1);
    EXPECT_EQ(data.data<uint8_t>()[n * 784 + 783], n % 3 + 1);
    EXPECT_EQ(ws_.GetTensor("label").data<int32_t>()[n], 7 - n % 3);
  }
}

TEST_P(DBTest, RecordErrors) {
  auto check = [&](const std::string& sub, std::vector<std::pair<std::string, std::string>> recs,
                   int64_t batch, std::vector<std::string> outputs, std::vector<std::string> want) {
    SCOPED_TRACE(sub);
    TempDir dir;
    path_ = dir / sub;
    WriteDB(GetParam(), path_, recs);
    auto op = Open(batch, {}, outputs);
    want.push_back(path_);
    ExpectThrows([&] { op->Run(0); }, want);
    ws_.RemoveBlob("reader");  // closes the DB before its folder goes
  };
  const std::vector<std::string> three = {"image", "label", "extra"};
  check("garbage", {{Key(0), std::string("\xff\xff\xff\xff", 4)}}, 2, three,
        {"record '00000000'", "is not a serialized TensorProtos"});

  // Different tensor count in record 1.
  TensorProtos two;
  two.ParseFromString(Record(1));
  two.mutable_protos()->RemoveLast();
  check("count", {{Key(0), Record(0)}, {Key(1), two.SerializeAsString()}}, 2, three,
        {"record '00000001'", "holds 2 tensor(s) but the first record read held 3"});

  TensorProtos dims;
  dims.ParseFromString(Record(1));
  dims.mutable_protos(0)->set_dims(2, 6);
  dims.mutable_protos(0)->set_dims(1, 1);
  check("dims", {{Key(0), Record(0)}, {Key(1), dims.SerializeAsString()}}, 2, three,
        {"record '00000001'", "tensor 0 has dims [1, 1, 6]", "[1, 2, 3]"});

  TensorProtos dtype;
  dtype.ParseFromString(Record(1));
  dtype.mutable_protos(1)->set_data_type(TensorProto::INT64);
  dtype.mutable_protos(1)->clear_int32_data();
  dtype.mutable_protos(1)->add_int64_data(1);
  check("dtype", {{Key(0), Record(0)}, {Key(1), dtype.SerializeAsString()}}, 2, three,
        {"tensor 1 has type int64", "int32"});

  check("outputs", Records(2), 2, {"image", "label", "extra", "more"},
        {"holds 3 tensor(s) but the op has 4 output(s): more outputs than tensors"});
  check("fewer", Records(2), 2, {"image", "label"}, {"fewer outputs than tensors"});

  // Dims that disagree with the data.
  TensorProtos bad;
  bad.ParseFromString(Record(0));
  bad.mutable_protos(0)->set_byte_data("abc");
  check("data", {{Key(0), bad.SerializeAsString()}}, 1, three, {"byte_data", "record '00000000'"});
}

// Prefetching (the default) and no_prefetch give the same batches, past the end of the DB and
// after CreateDB reopens it, batched or not; and the expected records.
TEST_P(DBTest, PrefetchGivesTheSameBatches) {
  WriteDB(GetParam(), path_, Records(5));
  const std::vector<std::string> outs = {"image", "label", "extra"};
  for (int64_t batch : {3, 0}) {
    std::vector<std::string> seen[2];
    for (bool no_prefetch : {false, true}) {
      SCOPED_TRACE(MakeString("batch ", batch, no_prefetch ? " no_prefetch" : " prefetch"));
      Workspace ws;
      ws.RunNetOnce(Net(CreateDBDef(GetParam(), path_)));
      auto op = CreateOperator(InputDef(batch, outs, no_prefetch), &ws);
      const int items = batch > 0 ? static_cast<int>(batch) : 1;
      for (int run = 0; run < 8; ++run) {
        if (run == 6) ws.RunNetOnce(Net(CreateDBDef(GetParam(), path_)));  // starts over
        seen[no_prefetch].push_back(RunAndDescribe(op.get(), ws, outs));
        std::vector<int> ids;
        const int first = run < 6 ? run * items : (run - 6) * items;
        for (int k = 0; k < items; ++k) ids.push_back((first + k) % 5);
        const Tensor& label = ws.GetTensor("label");
        ASSERT_EQ(label.numel(), items);
        for (int k = 0; k < items; ++k) EXPECT_EQ(label.data<int32_t>()[k], ids[k]) << run;
      }
    }
    EXPECT_EQ(seen[0], seen[1]);
  }
}

// CreateDB run again while the reader is still in use (here held by the test; in a net, by an
// input op's prefetch thread reading a batch): it waits until the old reader is released before
// it opens the DB again (a LevelDB can be open only once per process).
TEST_P(DBTest, CreateDBAgainWaitsForTheOldReader) {
  WriteDB(GetParam(), path_, Records(5));
  ws_.RunNetOnce(Net(CreateDBDef(GetParam(), path_)));
  std::shared_ptr<db::DBReader> held = ws_.GetBlob("reader")->GetShared<db::DBReader>();
  std::string key, value;
  held->Read(&key, &value);
  EXPECT_EQ(key, Key(0));
  std::string error;
  std::thread again([&] {
    try {
      ws_.RunNetOnce(Net(CreateDBDef(GetParam(), path_)));
    } catch (const EnforceNotMet& e) {
      error = e.what();
    }
  });
  // The blob has let go of the reader (CreateDB is now waiting for the rest). Hold it a little
  // longer (a CreateDB that did not wait would open the LevelDB meanwhile and fail), release it.
  while (held.use_count() > 1) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  held.reset();
  again.join();
  EXPECT_EQ(error, "");
  auto op = CreateOperator(InputDef(2), &ws_);
  op->Run(0);
  ExpectBatch({0, 1}, true);
}

// The op runs one batch, so its worker reads the next one from the reader; CreateDB runs again
// (waiting for the worker if it is still reading): the prefetched batch is dropped and the next
// run reads the first records of the new reader. Repeated, to meet the worker at various points.
TEST_P(DBTest, CreateDBAgainDropsThePrefetchedBatch) {
  WriteDB(GetParam(), path_, Records(5));
  auto op = Open(4);
  for (int i = 0; i < 20; ++i) {
    op->Run(0);
    ExpectBatch({0, 1, 2, 3}, true);
    if (i % 2 == 1) {  // also with the prefetched batch consumed once
      op->Run(0);
      ExpectBatch({4, 0, 1, 2}, true);
    }
    ws_.RunNetOnce(Net(CreateDBDef(GetParam(), path_)));
  }
}

// A bad record fails the run that consumes its batch, with the same message as without
// prefetching; the runs before it succeed and reading continues after it the same way.
TEST_P(DBTest, PrefetchErrorsSurfaceAtTheConsumingRun) {
  auto recs = Records(5);
  recs[4].second = "\xff\xff not a proto";
  WriteDB(GetParam(), path_, recs);
  const std::vector<std::string> outs = {"image", "label", "extra"};
  std::vector<std::string> seen[2];
  for (bool no_prefetch : {false, true}) {
    Workspace ws;
    ws.RunNetOnce(Net(CreateDBDef(GetParam(), path_)));
    auto op = CreateOperator(InputDef(2, outs, no_prefetch), &ws);
    for (int run = 0; run < 6; ++run) {
      seen[no_prefetch].push_back(RunAndDescribe(op.get(), ws, outs));
    }
  }
  EXPECT_EQ(seen[0], seen[1]);
  for (int run = 0; run < 6; ++run) {
    // Runs 2 and 5 fail on record 4 (the failed run stops there: run 3 reads records 0, 1).
    const bool fails = run == 2 || run == 5;
    EXPECT_EQ(seen[0][run].rfind("error: ", 0) == 0, fails) << run << ": " << seen[0][run];
  }
  EXPECT_NE(seen[0][2].find("record '00000004'"), std::string::npos) << seen[0][2];
  EXPECT_NE(seen[0][2].find("is not a serialized TensorProtos"), std::string::npos);
}

// Destroying the op, or the workspace and then the op, while a batch is being prefetched: no
// hang, no crash, the DB closed after (it can be opened again).
TEST_P(DBTest, DestroyWhilePrefetching) {
  WriteDB(GetParam(), path_, Records(5));
  for (int i = 0; i < 20; ++i) {
    auto ws = std::make_unique<Workspace>();
    ws->RunNetOnce(Net(CreateDBDef(GetParam(), path_)));
    auto op = CreateOperator(InputDef(64), ws.get());
    op->Run(0);
    if (i % 2 == 0) ws.reset();  // the worker may still hold the reader
    op.reset();
    ws.reset();
  }
  // In a net owned by the workspace.
  for (int i = 0; i < 10; ++i) {
    Workspace ws;
    ws.RunNetOnce(Net(CreateDBDef(GetParam(), path_)));
    NetDef net = Net(InputDef(64));
    net.set_name("train");
    ws.CreateNet(net);
    ws.RunNet("train");
  }
  db::DBReader reader(GetParam(), path_);  // closed by all of the above
}

TEST_P(DBTest, MissingDBNamesPathAndType) {
  const std::string missing = dir_ / "nothing_here";
  ExpectThrows([&] { ws_.RunNetOnce(Net(CreateDBDef(GetParam(), missing))); },
               {"cannot open " + GetParam() + " DB '" + missing + "'", "no such file"});
  // A folder that is not a DB of this type.
  fs::create_directories(dir_ / "empty");
  ExpectThrows([&] { ws_.RunNetOnce(Net(CreateDBDef(GetParam(), dir_ / "empty"))); },
               {GetParam(), dir_ / "empty"});
  // An empty DB.
  WriteDB(GetParam(), path_, {});
  ExpectThrows([&] { ws_.RunNetOnce(Net(CreateDBDef(GetParam(), path_))); },
               {GetParam() + " DB '" + path_ + "' holds no records"});
}


// ---- DataInput's DB source (data/dataset_db.cc): {image, label} records into memory.

// Image uint8 of `dims` with values 7 i + k (k: storage index), label i % 5.
std::string ImageRecord(int i, const std::vector<int64_t>& dims, int label = -1) {
  TensorProtos protos;
  TensorProto* image = protos.add_protos();
  image->set_data_type(TensorProto::BYTE);
  int64_t n = 1;
  for (int64_t d : dims) {
    image->add_dims(d);
    n *= d;
  }
  std::string bytes;
  for (int64_t k = 0; k < n; ++k) bytes.push_back(static_cast<char>((7 * i + k) % 251));
  image->set_byte_data(bytes);
  TensorProto* l = protos.add_protos();
  l->set_data_type(TensorProto::INT32);
  l->add_int32_data(label >= 0 ? label : i % 5);
  std::string out;
  protos.SerializeToString(&out);
  return out;
}

TEST_P(DBTest, DataSourceReadsChannelFirstAndChannelLastImages) {
  for (bool hwc : {false, true}) {
    TempDir dir;
    const std::string path = dir / "db";
    const std::vector<int64_t> dims = hwc ? std::vector<int64_t>{5, 6, 3}
                                          : std::vector<int64_t>{3, 5, 6};
    std::vector<std::pair<std::string, std::string>> records;
    for (int i = 0; i < 6; ++i) records.emplace_back(Key(i), ImageRecord(i, dims));
    WriteDB(GetParam(), path, records);
    std::unique_ptr<DataSource> src = LoadDataSource(GetParam(), path);
    ASSERT_EQ(src->size(), 6);
    EXPECT_EQ(src->sample_dims(), (std::vector<int64_t>{3, 5, 6}));
    std::vector<uint8_t> chw(90);
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(src->Label(i), i % 5);
      src->ReadSample(i, chw.data());
      for (int c = 0; c < 3; ++c) {
        for (int p = 0; p < 30; ++p) {
          const int k = hwc ? p * 3 + c : c * 30 + p;  // where (c, p) was stored
          ASSERT_EQ(chw[c * 30 + p], (7 * i + k) % 251) << "sample " << i << " c " << c << " p " << p;
        }
      }
    }
    EXPECT_NE(src->description().find("6 samples"), std::string::npos) << src->description();
  }
}

TEST_P(DBTest, DataInputTrainsFromADB) {
  std::vector<std::pair<std::string, std::string>> records;
  for (int i = 0; i < 10; ++i) records.emplace_back(Key(i), ImageRecord(i, {1, 2, 2}));
  WriteDB(GetParam(), path_, records);
  OperatorDef def = MakeOperatorDef(
      "DataInput", "", {}, {"data", "label"},
      {MakeArgument("source", path_), MakeArgument("format", GetParam()),
       MakeArgument("batch_size", 4), MakeArgument("shuffle", 0),
       MakeArgument("scale", 0.5f), MakeArgument("prefetch", 0)});
  RunOp(def, {}, &ws_);
  const Tensor& data = ws_.GetTensor("data");
  EXPECT_EQ(data.dims(), (std::vector<int64_t>{4, 1, 2, 2}));
  const std::vector<float> v = ToFloatVector(data);
  for (int i = 0; i < 4; ++i) {
    for (int k = 0; k < 4; ++k) EXPECT_FLOAT_EQ(v[i * 4 + k], 0.5f * ((7 * i + k) % 251));
    EXPECT_EQ(ws_.GetTensor("label").data<int32_t>()[i], i % 5);
  }
}

TEST_P(DBTest, DataSourceErrorsNameTheRecord) {
  auto load = [&](const std::vector<std::pair<std::string, std::string>>& records) {
    TempDir dir;
    const std::string path = dir / "db";
    WriteDB(GetParam(), path, records);
    LoadDataSource(GetParam(), path);
  };
  const std::string ok = ImageRecord(0, {1, 5, 5});
  ExpectThrows([&] { load({{"a", ok}, {"b", "garbage"}}); }, {"record 'b'", "not a serialized"});
  ExpectThrows([&] { load({{"a", ok}, {"b", ImageRecord(1, {1, 5, 6})}}); },
               {"record 'b'", "differ from the first record's [1, 5, 5]"});
  ExpectThrows([&] { load({{"a", ImageRecord(0, {3, 5, 1})}}); }, {"cannot tell", "[3, 5, 1]"});
  ExpectThrows([&] { load({{"a", Record(0)}}); }, {"record 'a'", "cannot tell"});
  ExpectThrows([&] { load({{"a", ""}}); }, {"record 'a'", "0 tensor(s)"});
  TensorProtos float_image;
  TensorProto* f = float_image.add_protos();
  f->set_data_type(TensorProto::FLOAT);
  f->add_dims(1);
  f->add_float_data(1.f);
  TensorProto* l = float_image.add_protos();
  l->set_data_type(TensorProto::FLOAT);
  l->add_float_data(1.f);
  std::string fi;
  float_image.SerializeToString(&fi);
  ExpectThrows([&] { load({{"a", fi}}); }, {"record 'a'", "expected uint8 pixels"});
  ExpectThrows([&] { load({}); }, {"holds no records"});
  ExpectThrows([&] { LoadDataSource("idx5", path_); }, {"unknown data format 'idx5'"});
}

INSTANTIATE_TEST_SUITE_P(Backends, DBTest, ::testing::Values("leveldb", "lmdb"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(DBInputErrorsTest, UnsupportedAndMissingTypes) {
  Workspace ws;
  NetDef net;
  net.set_name("init");
  *net.add_op() = CreateDBDef("minidb", "/tmp/some.minidb");
  ExpectThrows([&] { ws.RunNetOnce(net); },
               {"cannot open minidb DB '/tmp/some.minidb'", "not supported by halfcaf"});
  *net.mutable_op(0) = CreateDBDef("nosuchdb", "/tmp/x");
  ExpectThrows([&] { ws.RunNetOnce(net); }, {"unknown DB type", "available DB types"});
#ifndef HALFCAF_WITH_LEVELDB
  *net.mutable_op(0) = CreateDBDef("leveldb", "/tmp/x");
  ExpectThrows([&] { ws.RunNetOnce(net); }, {"without LevelDB support", "libleveldb-dev"});
#endif
#ifndef HALFCAF_WITH_LMDB
  *net.mutable_op(0) = CreateDBDef("LMDB", "/tmp/x");
  ExpectThrows([&] { ws.RunNetOnce(net); }, {"without LMDB support", "liblmdb-dev"});
#endif
}

TEST(DBInputErrorsTest, BadArgumentsAndInputs) {
  Workspace ws;
  ExpectThrows([&] { CreateOperator(MakeOperatorDef("CreateDB", "", {}, {"r"}, {}), &ws); },
               {"needs the argument 'db'"});
  ExpectThrows(
      [&] {
        CreateOperator(CreateDBDef("leveldb", "/x", {MakeArgument("shard_id", 2),
                                                     MakeArgument("num_shards", 2)}),
                       &ws);
      },
      {"shard_id must be in [0, num_shards = 2), got 2"});
  SetInput(&ws, "reader", FloatTensor({1}, {1.f}));
  ExpectThrows([&] { CreateOperator(InputDef(-1), &ws); }, {"batch_size must be >= 0, got -1"});
  auto op = CreateOperator(InputDef(2), &ws);
  ExpectThrows([&] { op->Run(0); }, {"input 0 'reader' is not a DB reader", "a tensor"});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
