// GAN scores: the Frechet distance (LAPACK dsyevd, cblas dgemm, in double), the test-mode
// classifier that gives GAN-test accuracy and features, and the sample grid.
#include "models/gan_metrics.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "core/argument.h"
#include "core/net.h"
#include "core/tensor_proto.h"
#include "data/image_codec.h"
#include "models/trainer_util.h"

// LAPACK's symmetric eigensolver (divide and conquer), exported by OpenBLAS. The trailing
// lengths are gfortran's hidden character-argument lengths.
extern "C" void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda,
                        double* w, double* work, const int* lwork, int* iwork, const int* liwork,
                        int* info, size_t jobz_len, size_t uplo_len);

namespace halfcaf {

namespace {

// Row i, column j of an (n, d) float or double CPU tensor, as double.
class Rows {
 public:
  Rows(const Tensor& t, const char* what) {
    HALFCAF_ENFORCE(t.device().type == DeviceType::CPU, "FrechetDistance: ", what,
                    " must be on the CPU, got ", t.device().ToString());
    HALFCAF_ENFORCE(t.ndim() == 2, "FrechetDistance: ", what,
                    " must be an (N, D) feature matrix, got ", t.DebugString());
    HALFCAF_ENFORCE(t.dtype() == DataType::FLOAT || t.dtype() == DataType::DOUBLE,
                    "FrechetDistance: ", what, " must be float or double, got ", t.DebugString());
    n_ = t.dim(0);
    d_ = t.dim(1);
    if (t.dtype() == DataType::FLOAT)
      f_ = t.data<float>();
    else
      d_data_ = t.data<double>();
  }
  int64_t n() const { return n_; }
  int64_t d() const { return d_; }
  double at(int64_t i) const { return f_ ? static_cast<double>(f_[i]) : d_data_[i]; }

 private:
  int64_t n_ = 0, d_ = 0;
  const float* f_ = nullptr;
  const double* d_data_ = nullptr;
};

// Mean (d) and unbiased covariance (d x d, row-major) of the rows.
void MeanAndCovariance(const Rows& x, const char* what, std::vector<double>* mean,
                       std::vector<double>* cov) {
  const int64_t n = x.n(), d = x.d();
  mean->assign(static_cast<size_t>(d), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      const double v = x.at(i * d + j);
      HALFCAF_ENFORCE(std::isfinite(v), "FrechetDistance: ", what, " has a non-finite value (", v,
                      ") at row ", i, ", column ", j);
      (*mean)[j] += v;
    }
  }
  for (double& m : *mean) m /= static_cast<double>(n);
  std::vector<double> centred(static_cast<size_t>(n * d));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) centred[i * d + j] = x.at(i * d + j) - (*mean)[j];
  }
  cov->assign(static_cast<size_t>(d * d), 0.0);
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(d), static_cast<int>(d),
              static_cast<int>(n), 1.0 / static_cast<double>(n - 1), centred.data(),
              static_cast<int>(d), centred.data(), static_cast<int>(d), 0.0, cov->data(),
              static_cast<int>(d));
}

// Eigenvalues (ascending) of the symmetric n x n matrix `a`; with `vectors`, `a` is replaced by
// the eigenvectors, row k of the row-major array being eigenvector k.
std::vector<double> SymmetricEigen(std::vector<double>* a, int n, bool vectors) {
  const char jobz = vectors ? 'V' : 'N', uplo = 'U';
  std::vector<double> w(static_cast<size_t>(n));
  int lwork = -1, liwork = -1, info = 0, iwork_query = 0;
  double work_query = 0;
  dsyevd_(&jobz, &uplo, &n, a->data(), &n, w.data(), &work_query, &lwork, &iwork_query, &liwork,
          &info, 1, 1);
  HALFCAF_ENFORCE(info == 0, "FrechetDistance: dsyevd's workspace query failed (info ", info, ")");
  lwork = std::max(1, static_cast<int>(work_query));
  liwork = std::max(1, iwork_query);
  std::vector<double> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  dsyevd_(&jobz, &uplo, &n, a->data(), &n, w.data(), work.data(), &lwork, iwork.data(), &liwork,
          &info, 1, 1);
  HALFCAF_ENFORCE(info == 0, "FrechetDistance: the eigendecomposition of a ", n, " x ", n,
                  " matrix did not converge (dsyevd info ", info, ")");
  return w;
}

// The label or prediction values of an int32 / int64 tensor of n elements.
std::vector<int64_t> IndexValues(const Tensor& t, int64_t n, const char* what) {
  HALFCAF_ENFORCE(t.device().type == DeviceType::CPU, what, " must be on the CPU");
  HALFCAF_ENFORCE(t.dtype() == DataType::INT32 || t.dtype() == DataType::INT64, what,
                  " must be int32 or int64 class indices, got ", t.DebugString());
  HALFCAF_ENFORCE(t.numel() == n, what, " holds ", t.numel(), " values (", t.DebugString(),
                  ") for ", n, " images");
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    out[i] = t.dtype() == DataType::INT32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
  }
  return out;
}

}  // namespace

double FrechetDistance(const Tensor& a, const Tensor& b) {
  const Rows ra(a, "the first set"), rb(b, "the second set");
  HALFCAF_ENFORCE(ra.d() == rb.d(),
                  "FrechetDistance: the sets have different feature sizes: ", a.DebugString(),
                  " vs ", b.DebugString());
  HALFCAF_ENFORCE(ra.n() >= 2 && rb.n() >= 2,
                  "FrechetDistance: each set needs at least 2 rows for a covariance, got ",
                  a.DebugString(), " and ", b.DebugString());
  HALFCAF_ENFORCE(ra.d() >= 1 && ra.d() <= 46340, "FrechetDistance: feature size ", ra.d(),
                  " is out of range [1, 46340]");
  const int d = static_cast<int>(ra.d());
  std::vector<double> mu_a, mu_b, s_a, s_b;
  MeanAndCovariance(ra, "the first set", &mu_a, &s_a);
  MeanAndCovariance(rb, "the second set", &mu_b, &s_b);

  double mean_term = 0, trace_a = 0, trace_b = 0;
  for (int i = 0; i < d; ++i) {
    mean_term += (mu_a[i] - mu_b[i]) * (mu_a[i] - mu_b[i]);
    trace_a += s_a[i * d + i];
    trace_b += s_b[i * d + i];
  }

  // R = S_a^{1/2} = E^T diag(sqrt(max(l, 0))) E, E's rows the eigenvectors of S_a.
  std::vector<double> e = s_a;
  const std::vector<double> l = SymmetricEigen(&e, d, /*vectors=*/true);
  std::vector<double> scaled(e.size());
  for (int k = 0; k < d; ++k) {
    const double s = std::sqrt(std::max(l[k], 0.0));
    for (int j = 0; j < d; ++j) scaled[k * d + j] = s * e[k * d + j];
  }
  std::vector<double> r(e.size()), t(e.size()), m(e.size());
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, d, d, 1.0, e.data(), d, scaled.data(), d,
              0.0, r.data(), d);
  // M = R S_b R, symmetric in exact arithmetic; symmetrised against rounding.
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, s_b.data(), d, r.data(), d,
              0.0, t.data(), d);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, r.data(), d, t.data(), d,
              0.0, m.data(), d);
  for (int i = 0; i < d; ++i) {
    for (int j = i + 1; j < d; ++j) {
      const double v = 0.5 * (m[i * d + j] + m[j * d + i]);
      m[i * d + j] = m[j * d + i] = v;
    }
  }
  double trace_sqrt = 0;
  for (double v : SymmetricEigen(&m, d, /*vectors=*/false))
    trace_sqrt += std::sqrt(std::max(v, 0.0));
  return std::max(0.0, mean_term + trace_a + trace_b - 2.0 * trace_sqrt);
}

ClassAccuracy ScorePredictions(const Tensor& predictions, const Tensor& labels, int num_classes) {
  HALFCAF_ENFORCE(num_classes >= 1, "ScorePredictions: num_classes must be >= 1, got ",
                  num_classes);
  const int64_t n = predictions.numel();
  HALFCAF_ENFORCE(n >= 1, "ScorePredictions: no predictions to score");
  const std::vector<int64_t> pred = IndexValues(predictions, n, "the predictions");
  const std::vector<int64_t> lab = IndexValues(labels, n, "the labels");
  ClassAccuracy out;
  std::vector<int64_t> correct(static_cast<size_t>(num_classes), 0);
  out.per_class_count.assign(static_cast<size_t>(num_classes), 0);
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    HALFCAF_ENFORCE(lab[i] >= 0 && lab[i] < num_classes, "label ", i, " is ", lab[i],
                    ", outside the classifier's classes [0, ", num_classes, ")");
    ++out.per_class_count[lab[i]];
    if (pred[i] == lab[i]) {
      ++correct[lab[i]];
      ++total;
    }
  }
  out.overall = static_cast<double>(total) / static_cast<double>(n);
  out.per_class.resize(static_cast<size_t>(num_classes));
  for (int c = 0; c < num_classes; ++c) {
    out.per_class[c] =
        out.per_class_count[c] == 0
            ? std::nan("")
            : static_cast<double>(correct[c]) / static_cast<double>(out.per_class_count[c]);
  }
  return out;
}

NetDef ClassifierTestNet(const NetDef& forward, const ClassifierScorerOptions& options) {
  const NetDef test = TestModeForward(forward);
  NetDef out = test;
  out.clear_op();
  out.clear_external_input();
  out.clear_external_output();
  out.set_name(forward.name().empty() ? "classifier_test" : forward.name() + "_test");
  out.clear_device_option();  // the scorer runs on the CPU
  // Blobs that need the label: what the removed ops wrote.
  std::set<std::string> gone = {options.label_blob};
  std::set<std::string> produced, gone_ever;
  bool reads_data = false;
  for (const OperatorDef& op : test.op()) {
    bool needs_label = false;
    for (const auto& in : op.input()) needs_label = needs_label || gone.count(in) > 0;
    if (needs_label && op.type() == "SoftmaxWithLoss" && op.input_size() >= 1 &&
        gone.count(op.input(0)) == 0 && op.output_size() >= 1) {
      OperatorDef softmax = MakeOperatorDef("Softmax", op.name(), {op.input(0)}, {op.output(0)});
      for (const Argument& arg : op.arg()) {
        if (arg.name() == "axis") *softmax.add_arg() = arg;
      }
      *out.add_op() = softmax;
      produced.insert(op.output(0));
      gone.erase(op.output(0));
      for (int k = 1; k < op.output_size(); ++k) {
        gone.insert(op.output(k));
        gone_ever.insert(op.output(k));
      }
      reads_data = reads_data || op.input(0) == options.data_blob;
      continue;
    }
    if (needs_label) {
      for (const auto& o : op.output()) {
        gone.insert(o);
        gone_ever.insert(o);
      }
      continue;
    }
    for (const auto& in : op.input()) reads_data = reads_data || in == options.data_blob;
    for (const auto& o : op.output()) {
      gone.erase(o);
      produced.insert(o);
    }
    *out.add_op() = op;
    out.mutable_op(out.op_size() - 1)->clear_device_option();
  }
  HALFCAF_ENFORCE(reads_data, "the classifier net '", forward.name(),
                  "' has no op reading the data blob '", options.data_blob,
                  "' (once the ops that need '", options.label_blob, "' are removed)");
  for (const auto& [blob, what] :
       {std::pair<std::string, const char*>{options.prob_blob, "probability"},
        {options.feature_blob, "feature"}}) {
    if (produced.count(blob) && !gone.count(blob)) continue;
    HALFCAF_ENFORCE(!gone_ever.count(blob), "the classifier's ", what, " blob '", blob,
                    "' depends on the label blob '", options.label_blob,
                    "'; name a blob computed from the images alone");
    std::string outputs;
    for (const auto& p : produced) outputs += (outputs.empty() ? "" : ", ") + p;
    HALFCAF_THROW("the classifier net '", forward.name(), "' has no ", what, " blob '", blob,
                  "'; its ops write: ", outputs);
  }
  // External inputs: what the ops read before any op writes it.
  std::set<std::string> written;
  out.add_external_input(options.data_blob);
  std::set<std::string> listed = {options.data_blob};
  for (const OperatorDef& op : out.op()) {
    for (const auto& in : op.input()) {
      if (!written.count(in) && listed.insert(in).second) out.add_external_input(in);
    }
    for (const auto& o : op.output()) written.insert(o);
  }
  out.add_external_output(options.prob_blob);
  if (options.feature_blob != options.prob_blob) out.add_external_output(options.feature_blob);
  return out;
}

ClassifierScorer::ClassifierScorer(const NetDef& forward, const std::string& params_path,
                                   ClassifierScorerOptions options)
    : options_(std::move(options)) {
  HALFCAF_ENFORCE(options_.batch_size >= 1, "ClassifierScorer: batch_size must be >= 1, got ",
                  options_.batch_size);
  test_net_ = ClassifierTestNet(forward, options_);
  Workspace params;
  FeedTensorProtosFile(params_path, &params);
  // Which op reads each parameter first, for the message when it is missing.
  std::set<std::string> written;
  for (int i = 0; i < test_net_.op_size(); ++i) {
    const OperatorDef& op = test_net_.op(i);
    for (const auto& in : op.input()) {
      if (in == options_.data_blob || written.count(in) || ws_.HasBlob(in)) continue;
      HALFCAF_ENFORCE(params.HasBlob(in), params_path, ": no parameter '", in, "', which op #", i,
                      " (", op.type(), " '", op.name(), "') of the classifier reads; was the file ",
                      "written for another net?");
      ws_.CreateTensor(in)->CopyFrom(params.GetTensor(in));
    }
    for (const auto& o : op.output()) written.insert(o);
  }
  if (!options_.image_dims.empty()) {
    // A probe image: the net is created and its shapes checked now, and num_classes() is known.
    std::vector<int64_t> dims = {1};
    dims.insert(dims.end(), options_.image_dims.begin(), options_.image_dims.end());
    Tensor probe(dims, DataType::FLOAT);
    std::fill(probe.mutable_data<float>(), probe.mutable_data<float>() + probe.numel(), 0.0f);
    try {
      Run(probe);
    } catch (EnforceNotMet& e) {
      e.AddContext("ClassifierScorer: running the classifier on a " + DimsString(dims) + " image");
      throw;
    }
  }
}

void ClassifierScorer::CheckImages(const Tensor& images) const {
  std::string want = "(N";
  for (int64_t d : options_.image_dims) want += ", " + std::to_string(d);
  want += options_.image_dims.empty() ? ", ...)" : ")";
  HALFCAF_ENFORCE(images.device().type == DeviceType::CPU,
                  "the classifier's images must be a CPU tensor");
  HALFCAF_ENFORCE(images.dtype() == DataType::FLOAT, "the classifier's images must be float32 ",
                  want, ", got ", images.DebugString());
  HALFCAF_ENFORCE(images.ndim() >= 2 && images.dim(0) >= 1,
                  "the classifier needs at least one image ", want, ", got ", images.DebugString());
  if (!options_.image_dims.empty()) {
    const std::vector<int64_t> per(images.dims().begin() + 1, images.dims().end());
    HALFCAF_ENFORCE(per == options_.image_dims, "the classifier's images must be ", want,
                    " float32, got ", images.DebugString());
  }
  const float* x = images.data<float>();
  for (int64_t i = 0; i < images.numel(); ++i) {
    HALFCAF_ENFORCE(std::isfinite(x[i]), "image ", i / images.size_from_dim(1),
                    " has a non-finite value (", x[i], ")");
  }
}

ClassifierScorer::Output ClassifierScorer::Run(const Tensor& images) {
  CheckImages(images);
  const int64_t n = images.dim(0), per = images.size_from_dim(1);
  Output out;
  out.predictions = Tensor({n}, DataType::INT32);
  int32_t* pred = out.predictions.mutable_data<int32_t>();
  float* features = nullptr;
  int64_t feature_size = 0;
  NetBase* net = created_ ? ws_.GetNet(test_net_.name()) : nullptr;
  for (int64_t start = 0; start < n; start += options_.batch_size) {
    const int64_t b = std::min(options_.batch_size, n - start);
    std::vector<int64_t> dims = images.dims();
    dims[0] = b;
    Tensor* in = ws_.CreateTensor(options_.data_blob);
    in->Resize(dims);
    std::memcpy(in->mutable_data<float>(), images.data<float>() + start * per,
                static_cast<size_t>(b * per) * sizeof(float));
    if (net == nullptr) {
      net = ws_.CreateNet(test_net_);
      created_ = true;
    }
    net->Run();
    net->CheckDeferredErrors();

    const Tensor& prob = ws_.GetTensor(options_.prob_blob);
    HALFCAF_ENFORCE(prob.dtype() == DataType::FLOAT && prob.ndim() >= 2 && prob.dim(0) == b,
                    "the classifier's probability blob '", options_.prob_blob, "' is ",
                    prob.DebugString(), " for a batch of ", b, "; expected float (", b,
                    ", classes)");
    const int64_t k = prob.size_from_dim(1);
    HALFCAF_ENFORCE(k >= 1 && k <= INT32_MAX, "the classifier's probability blob '",
                    options_.prob_blob, "' has ", k, " classes");
    num_classes_ = static_cast<int>(k);
    const float* p = prob.data<float>();
    for (int64_t i = 0; i < b; ++i) {
      const float* row = p + i * k;
      pred[start + i] = static_cast<int32_t>(std::max_element(row, row + k) - row);
    }
    const Tensor& feat = ws_.GetTensor(options_.feature_blob);
    HALFCAF_ENFORCE(feat.dtype() == DataType::FLOAT && feat.ndim() >= 1 && feat.dim(0) == b,
                    "the classifier's feature blob '", options_.feature_blob, "' is ",
                    feat.DebugString(), " for a batch of ", b, "; expected float (", b,
                    ", features)");
    if (features == nullptr) {
      feature_size = feat.size_from_dim(1);
      out.features = Tensor({n, feature_size}, DataType::FLOAT);
      features = out.features.mutable_data<float>();
    }
    HALFCAF_ENFORCE(feat.size_from_dim(1) == feature_size, "the classifier's feature blob '",
                    options_.feature_blob, "' changed size between batches");
    std::memcpy(features + start * feature_size, feat.data<float>(),
                static_cast<size_t>(b * feature_size) * sizeof(float));
  }
  return out;
}

double ClassifierScorer::GanTestAccuracy(const Tensor& images, const Tensor& requested_labels) {
  CheckImages(images);
  HALFCAF_ENFORCE(requested_labels.numel() == images.dim(0),
                  "GanTestAccuracy: ", requested_labels.numel(), " requested labels (",
                  requested_labels.DebugString(), ") for ", images.dim(0), " images");
  const Output out = Run(images);
  return ScorePredictions(out.predictions, requested_labels, num_classes_).overall;
}

std::string EncodeSampleGrid(const Tensor& images, int rows, int gap) {
  HALFCAF_ENFORCE(images.device().type == DeviceType::CPU && images.dtype() == DataType::FLOAT &&
                      images.ndim() == 4 && images.dim(1) == 1,
                  "EncodeSampleGrid: images must be (N, 1, H, W) float on the CPU, got ",
                  images.DebugString());
  const int64_t n = images.dim(0), h = images.dim(2), w = images.dim(3);
  HALFCAF_ENFORCE(rows >= 1 && n >= 1 && n % rows == 0, "EncodeSampleGrid: ", n,
                  " images do not fill ", rows, " rows");
  HALFCAF_ENFORCE(gap >= 0, "EncodeSampleGrid: gap must be >= 0, got ", gap);
  const int64_t cols = n / rows;
  const int64_t height = rows * h + (rows - 1) * gap, width = cols * w + (cols - 1) * gap;
  HALFCAF_ENFORCE(h >= 1 && w >= 1 && height <= 65535 && width <= 65535,
                  "EncodeSampleGrid: a grid of ", height, " x ", width, " pixels is out of range");
  image::Image img;
  img.height = static_cast<int>(height);
  img.width = static_cast<int>(width);
  img.channels = 1;
  img.pixels.assign(static_cast<size_t>(height * width), 0);
  const float* x = images.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t y0 = (i / cols) * (h + gap), x0 = (i % cols) * (w + gap);
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t xx = 0; xx < w; ++xx) {
        const float v = x[(i * h + y) * w + xx];
        const float c = std::isnan(v) ? 0.0f : std::min(1.0f, std::max(0.0f, v));
        img.pixels[(y0 + y) * width + x0 + xx] = static_cast<uint8_t>(std::lround(c * 255.0f));
      }
    }
  }
  return image::EncodePng(img);
}

}  // namespace halfcaf
