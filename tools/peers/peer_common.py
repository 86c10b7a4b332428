"""Helpers the benchmark peers share: quantiles of timings and the process's memory (resident
set, its peak, and resetting that peak between configurations)."""
import ctypes
import gc
import resource
import statistics


def quantile(values, q):
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def trim_c_heap():
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def peak_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class MemoryWindow:
    """The peak memory of one configuration: on CUDA the allocator's peak above what was allocated
    at the start, on the CPU the peak resident set above the start (0 where the kernel cannot
    reset the peak). What earlier configurations freed but the C allocator kept would otherwise
    sit in the baseline and hide this configuration's own peak, so it is returned first."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
            self.base = torch.cuda.memory_allocated(device)
        else:
            gc.collect()
            trim_c_heap()
            self.hwm_reset = reset_peak_rss()
            self.base = rss_mb()

    def peak_mb(self):
        if self.device.type == "cuda":
            peak = (self.torch.cuda.max_memory_allocated(self.device) - self.base) / 2**20
        else:
            peak = (peak_rss_mb() - self.base) if self.hwm_reset else 0.0
        return max(peak, 0.0)


def timing_fields(times, batch):
    """benchmark's timing fields of one configuration from its per-iteration milliseconds."""
    med = statistics.median(times)
    return {
        "iters": len(times),
        "ms_per_iter": med,
        "ms_per_iter_median": med,
        "ms_per_iter_min": min(times),
        "ms_per_iter_max": max(times),
        "ms_per_iter_p10": quantile(times, 0.1),
        "ms_per_iter_p90": quantile(times, 0.9),
        "images_per_sec": 1000.0 * batch / med,
    }
