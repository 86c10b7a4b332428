// Signal handlers on a stack of their own. oneDNN 2.6's generated SGEMM kernels (AVX2 and AVX-512:
// math::Gemm's dnnl_sgemm, and the oneDNN primitives built on them) point rsp into a heap
// workspace while they run (oneDNN issue 4845, fixed in its 3.x line). A signal handled on the
// interrupted thread's stack then has its frame written into the heap, which corrupts it (a
// Ctrl-C during training aborted later in free()). A handler installed with SA_ONSTACK runs on the
// alternate stack that UseAlternateSignalStack() gives the calling thread, so rsp is never
// written through.
#pragma once

namespace halfcaf {

// Gives the calling thread an alternate signal stack (sigaltstack), once per thread; handlers
// installed with SA_ONSTACK then run on it. Throws if the system refuses.
void UseAlternateSignalStack();

// Installs `handler` for signal `sig` to run on that stack (SA_ONSTACK, SA_RESTART), giving the
// calling thread the stack first. Throws if the system refuses.
void HandleSignalOnOwnStack(int sig, void (*handler)(int));

}  // namespace halfcaf
