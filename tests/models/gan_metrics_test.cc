// GAN scores (models/gan_metrics.h): the Frechet distance against closed forms (diagonal
// covariances on samples built to have them exactly, a rotation of them, the 2 x 2 formula for
// non-commuting covariances, and a Denman-Beavers square root in 5 dimensions); the classifier
// scorer on a hand-made net whose classes and features are known exactly; the sample grid
// decoded back pixel by pixel.
#include "models/gan_metrics.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "core/argument.h"
#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "data/image_codec.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

using Matrix = std::vector<std::vector<double>>;

template <typename T>
Tensor MatrixTensor(const Matrix& m) {
  const int64_t n = static_cast<int64_t>(m.size()), d = static_cast<int64_t>(m[0].size());
  Tensor t({n, d}, DataTypeOf<T>());
  T* p = t.mutable_data<T>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) p[i * d + j] = static_cast<T>(m[i][j]);
  }
  return t;
}

Matrix RandomMatrix(int n, int d, uint32_t seed, double scale = 1.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> g(0.0, scale);
  Matrix m(n, std::vector<double>(d));
  for (auto& row : m) {
    for (double& v : row) v = g(rng);
  }
  return m;
}

// Sylvester's Hadamard matrix entry: (-1)^popcount(i & j).
double Hadamard(int i, int j) { return __builtin_popcount(i & j) % 2 ? -1.0 : 1.0; }

// n samples (n a power of two) of d dimensions with mean `mu` and, exactly, unbiased variances
// scale[j]^2 * n / (n - 1) and zero covariances: column j is mu_j + scale_j * (Hadamard column
// j + 1), whose entries sum to 0 and are orthogonal to the other columns. All values dyadic, so
// exact in float too.
Matrix ExactSamples(int n, const std::vector<double>& mu, const std::vector<double>& scale) {
  Matrix m(n, std::vector<double>(mu.size()));
  for (int i = 0; i < n; ++i) {
    for (size_t j = 0; j < mu.size(); ++j) {
      m[i][j] = mu[j] + scale[j] * Hadamard(i, static_cast<int>(j) + 1);
    }
  }
  return m;
}

void MeanCov(const Matrix& x, std::vector<double>* mu, Matrix* cov) {
  const size_t n = x.size(), d = x[0].size();
  mu->assign(d, 0.0);
  for (const auto& row : x) {
    for (size_t j = 0; j < d; ++j) (*mu)[j] += row[j] / n;
  }
  cov->assign(d, std::vector<double>(d, 0.0));
  for (const auto& row : x) {
    for (size_t i = 0; i < d; ++i) {
      for (size_t j = 0; j < d; ++j) (*cov)[i][j] += (row[i] - (*mu)[i]) * (row[j] - (*mu)[j]);
    }
  }
  for (auto& row : *cov) {
    for (double& v : row) v /= static_cast<double>(n - 1);
  }
}

Matrix Mul(const Matrix& a, const Matrix& b) {
  const size_t n = a.size();
  Matrix c(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < n; ++k) {
      for (size_t j = 0; j < n; ++j) c[i][j] += a[i][k] * b[k][j];
    }
  }
  return c;
}

Matrix Inverse(Matrix a) {  // Gauss-Jordan with partial pivoting
  const size_t n = a.size();
  Matrix inv(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) inv[i][i] = 1;
  for (size_t c = 0; c < n; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < n; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    }
    std::swap(a[c], a[p]);
    std::swap(inv[c], inv[p]);
    const double d = a[c][c];
    for (size_t j = 0; j < n; ++j) {
      a[c][j] /= d;
      inv[c][j] /= d;
    }
    for (size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c];
      for (size_t j = 0; j < n; ++j) {
        a[r][j] -= f * a[c][j];
        inv[r][j] -= f * inv[c][j];
      }
    }
  }
  return inv;
}

// Tr(sqrt(A)) by the Denman-Beavers iteration (A with positive real eigenvalues).
double TraceSqrt(const Matrix& a) {
  const size_t n = a.size();
  Matrix y = a, z(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) z[i][i] = 1;
  for (int it = 0; it < 60; ++it) {
    const Matrix yi = Inverse(y), zi = Inverse(z);
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) {
        y[i][j] = 0.5 * (y[i][j] + zi[i][j]);
        z[i][j] = 0.5 * (z[i][j] + yi[i][j]);
      }
    }
  }
  double t = 0;
  for (size_t i = 0; i < n; ++i) t += y[i][i];
  return t;
}

// ||mu_a - mu_b||^2 + Tr(S_a) + Tr(S_b) - 2 Tr(sqrt(S_a S_b)) from the sample moments.
double ReferenceFrechet(const Matrix& a, const Matrix& b) {
  std::vector<double> mu_a, mu_b;
  Matrix s_a, s_b;
  MeanCov(a, &mu_a, &s_a);
  MeanCov(b, &mu_b, &s_b);
  double out = 0;
  for (size_t i = 0; i < mu_a.size(); ++i) {
    out += (mu_a[i] - mu_b[i]) * (mu_a[i] - mu_b[i]) + s_a[i][i] + s_b[i][i];
  }
  return out - 2 * TraceSqrt(Mul(s_a, s_b));
}

// A file removed when the test ends.
struct TempFile {
  std::string path;
  ~TempFile() { std::remove(path.c_str()); }
};

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(FrechetDistanceTest, IdenticalSetsGiveZero) {
  const Matrix x = RandomMatrix(200, 8, 1, 3.0);
  EXPECT_NEAR(FrechetDistance(MatrixTensor<float>(x), MatrixTensor<float>(x)), 0.0, 1e-9);
  EXPECT_NEAR(FrechetDistance(MatrixTensor<double>(x), MatrixTensor<double>(x)), 0.0, 1e-9);
}

TEST(FrechetDistanceTest, DiagonalGaussiansMatchTheClosedForm) {
  const int d = 20;
  std::vector<double> mu_a(d), mu_b(d), sa(d), sb(d);
  for (int j = 0; j < d; ++j) {
    mu_a[j] = 0.5 * j;
    mu_b[j] = 0.25 * (d - j);
    sa[j] = 0.25 * (j + 1);
    sb[j] = 0.125 * (3 * j % 7 + 1);
  }
  const Matrix a = ExactSamples(64, mu_a, sa), b = ExactSamples(128, mu_b, sb);
  double expected = 0;
  for (int j = 0; j < d; ++j) {
    const double var_a = sa[j] * sa[j] * 64 / 63, var_b = sb[j] * sb[j] * 128 / 127;
    expected += (std::sqrt(var_a) - std::sqrt(var_b)) * (std::sqrt(var_a) - std::sqrt(var_b)) +
                (mu_a[j] - mu_b[j]) * (mu_a[j] - mu_b[j]);
  }
  const double got = FrechetDistance(MatrixTensor<float>(a), MatrixTensor<float>(b));
  EXPECT_NEAR(got, expected, 1e-6 * expected);
  // Equal covariances: only the means count.
  const Matrix b2 = ExactSamples(64, mu_b, sa);
  double means = 0;
  for (int j = 0; j < d; ++j) means += (mu_a[j] - mu_b[j]) * (mu_a[j] - mu_b[j]);
  EXPECT_NEAR(FrechetDistance(MatrixTensor<float>(a), MatrixTensor<float>(b2)), means,
              1e-6 * means);
}

TEST(FrechetDistanceTest, RotatingBothSetsKeepsTheDistance) {
  // The same orthogonal Q applied to both diagonal sets: full covariances, the same distance.
  const int d = 12;
  std::vector<double> mu_a(d), mu_b(d), sa(d), sb(d);
  for (int j = 0; j < d; ++j) {
    mu_a[j] = 0.125 * j;
    mu_b[j] = -0.5 + 0.25 * (j % 3);
    sa[j] = 0.5 + 0.25 * j;
    sb[j] = 2.0 - 0.125 * j;
  }
  const Matrix a = ExactSamples(32, mu_a, sa), b = ExactSamples(64, mu_b, sb);
  Matrix q = RandomMatrix(d, d, 7);  // Gram-Schmidt on its rows
  for (int i = 0; i < d; ++i) {
    for (int k = 0; k < i; ++k) {
      double dot = 0;
      for (int j = 0; j < d; ++j) dot += q[i][j] * q[k][j];
      for (int j = 0; j < d; ++j) q[i][j] -= dot * q[k][j];
    }
    double norm = 0;
    for (int j = 0; j < d; ++j) norm += q[i][j] * q[i][j];
    for (int j = 0; j < d; ++j) q[i][j] /= std::sqrt(norm);
  }
  auto rotate = [&](const Matrix& x) {
    Matrix y(x.size(), std::vector<double>(d, 0.0));
    for (size_t r = 0; r < x.size(); ++r) {
      for (int i = 0; i < d; ++i) {
        for (int j = 0; j < d; ++j) y[r][i] += q[i][j] * x[r][j];
      }
    }
    return y;
  };
  const double plain = FrechetDistance(MatrixTensor<double>(a), MatrixTensor<double>(b));
  const double rotated =
      FrechetDistance(MatrixTensor<double>(rotate(a)), MatrixTensor<double>(rotate(b)));
  EXPECT_GT(plain, 1.0);
  EXPECT_NEAR(rotated, plain, 1e-9 * plain);
}

TEST(FrechetDistanceTest, NonCommutingTwoByTwoMatchesTheClosedForm) {
  // For 2 x 2 covariances Tr(sqrt(S_a S_b)) = sqrt(Tr(S_a S_b) + 2 sqrt(det S_a det S_b)).
  Matrix a = RandomMatrix(300, 2, 3), b = RandomMatrix(500, 2, 4);
  for (auto& r : a) r[1] = 0.8 * r[0] + 0.3 * r[1] + 1.0;  // correlated, tilted one way
  for (auto& r : b) r[0] = 2.0 * r[0] - 0.9 * r[1];        // and another
  std::vector<double> mu_a, mu_b;
  Matrix s_a, s_b;
  MeanCov(a, &mu_a, &s_a);
  MeanCov(b, &mu_b, &s_b);
  const Matrix p = Mul(s_a, s_b);
  const double det_a = s_a[0][0] * s_a[1][1] - s_a[0][1] * s_a[1][0];
  const double det_b = s_b[0][0] * s_b[1][1] - s_b[0][1] * s_b[1][0];
  const double tr_sqrt = std::sqrt(p[0][0] + p[1][1] + 2 * std::sqrt(det_a * det_b));
  const double expected = (mu_a[0] - mu_b[0]) * (mu_a[0] - mu_b[0]) +
                          (mu_a[1] - mu_b[1]) * (mu_a[1] - mu_b[1]) + s_a[0][0] + s_a[1][1] +
                          s_b[0][0] + s_b[1][1] - 2 * tr_sqrt;
  EXPECT_NEAR(FrechetDistance(MatrixTensor<double>(a), MatrixTensor<double>(b)), expected,
              1e-9 * expected);
}

TEST(FrechetDistanceTest, MatchesDenmanBeaversInFiveDimensions) {
  Matrix a = RandomMatrix(100, 5, 11), b = RandomMatrix(150, 5, 12, 2.0);
  for (auto& r : a) r[2] += 0.7 * r[0] - 0.4 * r[4];
  for (auto& r : b) r[1] -= 0.5 * r[3];
  const double expected = ReferenceFrechet(a, b);
  EXPECT_NEAR(FrechetDistance(MatrixTensor<double>(a), MatrixTensor<double>(b)), expected,
              1e-8 * expected);
}

TEST(FrechetDistanceTest, IsSymmetric) {
  Matrix a = RandomMatrix(50, 10, 21), b = RandomMatrix(80, 10, 22, 1.5);
  for (auto& r : b) r[0] += r[1];
  const double ab = FrechetDistance(MatrixTensor<float>(a), MatrixTensor<float>(b));
  const double ba = FrechetDistance(MatrixTensor<float>(b), MatrixTensor<float>(a));
  EXPECT_GT(ab, 1.0);
  EXPECT_NEAR(ab, ba, 1e-10 * ab);
}

TEST(FrechetDistanceTest, RejectsBadInputs) {
  const Tensor a = MatrixTensor<float>(RandomMatrix(10, 4, 1));
  EXPECT_NE(ErrorOf([&] {
              FrechetDistance(a, MatrixTensor<float>(RandomMatrix(10, 5, 2)));
            }).find("different feature sizes"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              FrechetDistance(a, MatrixTensor<float>(RandomMatrix(1, 4, 2)));
            }).find("at least 2 rows"),
            std::string::npos);
  Tensor nan = MatrixTensor<float>(RandomMatrix(10, 4, 3));
  nan.mutable_data<float>()[13] = std::nanf("");
  EXPECT_NE(ErrorOf([&] { FrechetDistance(a, nan); }).find("non-finite value (nan) at row 3"),
            std::string::npos);
  Tensor three_d({2, 2, 2}, DataType::FLOAT);
  EXPECT_NE(ErrorOf([&] { FrechetDistance(three_d, a); }).find("(N, D) feature matrix"),
            std::string::npos);
  Tensor ints({10, 4}, DataType::INT32);
  EXPECT_NE(ErrorOf([&] { FrechetDistance(a, ints); }).find("float or double"), std::string::npos);
}

// ---- ClassifierScorer on a hand-made classifier --------------------------------------------

// Images (N, 1, 2, 2) -> FC w1 (3 x 4) -> Relu in place ("hidden", the features) -> FC with the
// identity (pred = hidden) -> SoftmaxWithLoss + Accuracy with the label, as train_net trains.
// So the class is the argmax of relu(w1 x + b1) and the features are that vector.
NetDef HandNet() {
  NetDef net;
  net.set_name("hand");
  *net.add_op() = MakeOperatorDef("FC", "fc1", {"data", "w1", "b1"}, {"hidden"});
  *net.add_op() = MakeOperatorDef("Relu", "", {"hidden"}, {"hidden"});
  *net.add_op() = MakeOperatorDef("FC", "fc2", {"hidden", "w2", "b2"}, {"pred"});
  *net.add_op() = MakeOperatorDef("SoftmaxWithLoss", "", {"pred", "label"}, {"softmax", "loss"});
  *net.add_op() = MakeOperatorDef("Accuracy", "", {"softmax", "label"}, {"accuracy"});
  return net;
}

const float kW1[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, -1};
const float kB1[3] = {0, 0, 0.25f};

// Writes the hand net's parameters (all but `skip`), plus an unrelated blob, to a file.
std::string WriteHandParams(const std::string& skip = "") {
  TensorProtos protos;
  auto add = [&](const std::string& name, std::vector<int64_t> dims, const float* v) {
    if (name == skip) return;
    Tensor t(dims, DataType::FLOAT);
    std::copy(v, v + t.numel(), t.mutable_data<float>());
    TensorToProto(t, name, protos.add_protos());
  };
  const float eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, zeros[3] = {0, 0, 0}, junk[2] = {5, 6};
  add("w1", {3, 4}, kW1);
  add("b1", {3}, kB1);
  add("w2", {3, 3}, eye);
  add("b2", {3}, zeros);
  add("w1_momentum", {2}, junk);
  const std::string path = ::testing::TempDir() + "/gan_metrics_hand_" + std::to_string(getpid()) +
                           (skip.empty() ? "" : "_no_" + skip) + ".pb";
  WriteTensorProtosFile(protos, path);
  return path;
}

ClassifierScorerOptions HandOptions() {
  ClassifierScorerOptions opt;
  opt.feature_blob = "hidden";
  opt.image_dims = {1, 2, 2};
  opt.batch_size = 2;  // 5 images: batches of 2, 2 and 1
  return opt;
}

// Pixel values are multiples of 1/4, so every feature is exact in float.
Tensor HandImages(const std::vector<std::vector<float>>& px) {
  Tensor t({static_cast<int64_t>(px.size()), 1, 2, 2}, DataType::FLOAT);
  for (size_t i = 0; i < px.size(); ++i)
    std::copy(px[i].begin(), px[i].end(), t.mutable_data<float>() + 4 * i);
  return t;
}

TEST(ClassifierScorerTest, TestNetDropsTheLabelOps) {
  const NetDef test = ClassifierTestNet(HandNet(), HandOptions());
  ASSERT_EQ(test.op_size(), 4);
  EXPECT_EQ(test.op(3).type(), "Softmax");
  EXPECT_EQ(test.op(3).input(0), "pred");
  EXPECT_EQ(test.op(3).output(0), "softmax");
  for (const auto& op : test.op()) {
    for (const auto& in : op.input()) EXPECT_NE(in, "label");
  }
  EXPECT_EQ(std::vector<std::string>(test.external_output().begin(), test.external_output().end()),
            (std::vector<std::string>{"softmax", "hidden"}));
}

TEST(ClassifierScorerTest, PredictionsFeaturesAndAccuracyAreExact) {
  const TempFile params{WriteHandParams()};
  ClassifierScorer scorer(HandNet(), params.path, HandOptions());
  EXPECT_EQ(scorer.num_classes(), 3);
  // hidden = relu(x0, x1, x2 - x3 + 0.25).
  const Tensor images = HandImages({{1, 0, 0, 0},            // (1, 0, 0.25)      -> 0
                                    {0, 0.5f, 0, 0},         // (0, 0.5, 0.25)    -> 1
                                    {0, 0, 0.75f, 0},        // (0, 0, 1)         -> 2
                                    {0.25f, 0, 0, 1},        // (0.25, 0, 0)      -> 0
                                    {0, 0.75f, 1, 0.25f}});  // (0, 0.75, 1)      -> 2
  const ClassifierScorer::Output out = scorer.Run(images);
  ASSERT_EQ(out.predictions.dims(), (std::vector<int64_t>{5}));
  const std::vector<int32_t> want_pred = {0, 1, 2, 0, 2};
  EXPECT_EQ(
      std::vector<int32_t>(out.predictions.data<int32_t>(), out.predictions.data<int32_t>() + 5),
      want_pred);
  ASSERT_EQ(out.features.dims(), (std::vector<int64_t>{5, 3}));
  const std::vector<float> want_feat = {1, 0,     0.25f, 0, 0.5f, 0.25f, 0, 0,
                                        1, 0.25f, 0,     0, 0,    0.75f, 1};
  EXPECT_EQ(std::vector<float>(out.features.data<float>(), out.features.data<float>() + 15),
            want_feat);
  EXPECT_EQ(scorer.Features(images).dims(), out.features.dims());

  Tensor labels({5}, DataType::INT64);
  const int64_t requested[5] = {0, 1, 1, 0, 0};  // 3 of 5 as predicted
  std::copy(requested, requested + 5, labels.mutable_data<int64_t>());
  EXPECT_DOUBLE_EQ(scorer.GanTestAccuracy(images, labels), 0.6);
  Tensor labels32({5}, DataType::INT32);
  std::copy(want_pred.begin(), want_pred.end(), labels32.mutable_data<int32_t>());
  EXPECT_DOUBLE_EQ(scorer.GanTestAccuracy(images, labels32), 1.0);

  const ClassAccuracy acc = ScorePredictions(out.predictions, labels, 3);
  EXPECT_DOUBLE_EQ(acc.overall, 0.6);
  EXPECT_EQ(acc.per_class_count, (std::vector<int64_t>{3, 2, 0}));
  EXPECT_DOUBLE_EQ(acc.per_class[0], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(acc.per_class[1], 0.5);
  EXPECT_TRUE(std::isnan(acc.per_class[2]));
}

TEST(ClassifierScorerTest, ClearErrors) {
  const TempFile file{WriteHandParams()}, no_b2{WriteHandParams("b2")};
  const std::string& params = file.path;
  EXPECT_NE(ErrorOf([&] {
              ClassifierScorer(HandNet(), no_b2.path, HandOptions());
            }).find("no parameter 'b2', which op #2 (FC 'fc2')"),
            std::string::npos);
  ClassifierScorerOptions opt = HandOptions();
  opt.feature_blob = "fc9";
  EXPECT_NE(ErrorOf([&] {
              ClassifierScorer(HandNet(), params, opt);
            }).find("has no feature blob 'fc9'; its ops write: hidden, pred, softmax"),
            std::string::npos);
  opt.feature_blob = "accuracy";
  EXPECT_NE(ErrorOf([&] {
              ClassifierScorer(HandNet(), params, opt);
            }).find("feature blob 'accuracy' depends on the label blob 'label'"),
            std::string::npos);
  opt = HandOptions();
  opt.image_dims = {1, 3, 3};  // the net cannot take them: the probe image says so at once
  EXPECT_NE(ErrorOf([&] {
              ClassifierScorer(HandNet(), params, opt);
            }).find("running the classifier on a [1, 1, 3, 3] image"),
            std::string::npos);

  ClassifierScorer scorer(HandNet(), params, HandOptions());
  EXPECT_NE(ErrorOf([&] {
              scorer.Run(Tensor({4, 1, 3, 3}, DataType::FLOAT));
            }).find("must be (N, 1, 2, 2) float32, got float[4, 1, 3, 3]"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              scorer.Run(Tensor({4, 1, 2, 2}, DataType::INT32));
            }).find("must be float32"),
            std::string::npos);
  Tensor images = HandImages({{0, 0, 0, 0}, {0, 0, 0, 0}});
  images.mutable_data<float>()[5] = INFINITY;
  EXPECT_NE(ErrorOf([&] { scorer.Run(images); }).find("image 1 has a non-finite value"),
            std::string::npos);
  images.mutable_data<float>()[5] = 0;
  Tensor labels({2}, DataType::INT64);
  labels.mutable_data<int64_t>()[0] = 0;
  labels.mutable_data<int64_t>()[1] = 7;
  EXPECT_NE(ErrorOf([&] {
              scorer.GanTestAccuracy(images, labels);
            }).find("label 1 is 7, outside the classifier's classes [0, 3)"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              scorer.GanTestAccuracy(images, Tensor({3}, DataType::INT64));
            }).find("3 requested labels"),
            std::string::npos);
}

TEST(ClassifierScorerTest, LeNetGivesFc3Features) {
  // LeNet with its initial (random) parameters: the default blobs exist and have LeNet's sizes.
  NetDef init, fwd;
  ReadProtoFromFile(SourceDir() + "/models/lenet/lenet_init_net.pbtxt", &init);
  ReadProtoFromFile(SourceDir() + "/models/lenet/lenet_train_net.pbtxt", &fwd);
  Workspace ws;
  ws.RunNetOnce(init);
  const TempFile params{::testing::TempDir() + "/gan_metrics_lenet_" + std::to_string(getpid()) +
                        ".pb"};
  WriteBlobsToFile(ws, ws.Blobs(), params.path);
  ClassifierScorer scorer(fwd, params.path);
  EXPECT_EQ(scorer.num_classes(), 10);
  Tensor images({3, 1, 28, 28}, DataType::FLOAT);
  for (int64_t i = 0; i < images.numel(); ++i) images.mutable_data<float>()[i] = (i % 17) / 16.0f;
  const Tensor f = scorer.Features(images);
  ASSERT_EQ(f.dims(), (std::vector<int64_t>{3, 500}));
  float max = 0;
  for (int64_t i = 0; i < f.numel(); ++i) {
    EXPECT_GE(f.data<float>()[i], 0.0f);  // after fc3's Relu
    max = std::max(max, f.data<float>()[i]);
  }
  EXPECT_GT(max, 0.0f);
  EXPECT_EQ(scorer.test_net().op(scorer.test_net().op_size() - 1).type(), "Softmax");
}

// ---- EncodeSampleGrid ---------------------------------------------------------------------------

TEST(EncodeSampleGridTest, PlacesEveryPixel) {
  if (!image::FormatAvailable(image::Format::PNG)) GTEST_SKIP() << "built without libpng";
  const int n = 6, h = 3, w = 2, rows = 2, cols = 3, gap = 2;
  Tensor images({n, 1, h, w}, DataType::FLOAT);
  float* x = images.mutable_data<float>();
  for (int i = 0; i < n * h * w; ++i) x[i] = (i + 1) / 255.0f;  // distinct bytes 1..36
  x[0] = 2.0f;                                                  // clamped to 255
  x[1] = -1.0f;                                                 // clamped to 0
  x[2] = std::nanf("");                                         // 0
  const std::string png = EncodeSampleGrid(images, rows, gap);
  image::Image img;
  image::Decode(png.data(), png.size(), 1, &img);
  ASSERT_EQ(img.height, rows * h + (rows - 1) * gap);
  ASSERT_EQ(img.width, cols * w + (cols - 1) * gap);
  std::vector<bool> covered(img.pixels.size(), false);
  for (int i = 0; i < n; ++i) {
    const int y0 = (i / cols) * (h + gap), x0 = (i % cols) * (w + gap);
    for (int y = 0; y < h; ++y) {
      for (int xx = 0; xx < w; ++xx) {
        const int idx = (i * h + y) * w + xx;
        const int want = idx == 0 ? 255 : idx == 1 || idx == 2 ? 0 : idx + 1;
        const size_t p = static_cast<size_t>((y0 + y) * img.width + x0 + xx);
        EXPECT_EQ(img.pixels[p], want) << "image " << i << " pixel " << y << "," << xx;
        covered[p] = true;
      }
    }
  }
  for (size_t p = 0; p < covered.size(); ++p) {
    if (!covered[p]) {
      EXPECT_EQ(img.pixels[p], 0) << "gap pixel " << p;
    }
  }
}

TEST(EncodeSampleGridTest, RejectsBadInputs) {
  Tensor five({5, 1, 2, 2}, DataType::FLOAT);
  EXPECT_NE(ErrorOf([&] { EncodeSampleGrid(five, 2); }).find("5 images do not fill 2 rows"),
            std::string::npos);
  Tensor colour({4, 3, 2, 2}, DataType::FLOAT);
  EXPECT_NE(ErrorOf([&] { EncodeSampleGrid(colour, 2); }).find("(N, 1, H, W) float"),
            std::string::npos);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
