#!/usr/bin/env bash
# Every runtime and driver function libsn intercepts or calls (common/hooks.def)
# must exist in the simulated libraries, or libsn's wrapper for it is never
# exercised here: the runtime's under the real version node
# (name@@libcudart.so.13) and under a name the real libcudart exports, the
# driver's unversioned as in the real libcuda.so.1; cuRAND's under the
# real version node of libcurand.so.10.
. "$(dirname "$0")/lib.sh"
hooks="$(dirname "$0")/../common/hooks.def"
real_cudart="${CUDA_HOME:-/usr/local/cuda}/lib64/libcudart.so.13"
grep -oE 'SN_(HOOK|HOOK_PLAIN|HOOK_ALLOC|HOOK_FREE|REAL_ONLY)\((CUDART|CUDA), [^,]+, [A-Za-z0-9_]+' "$hooks" |
    sed -E 's/^SN_[A-Z_]+\(([A-Z]+), [^,]+, /\1 /' >"$tmp/hooks"
nm -D --defined-only "$BUILD_DIR/sim/libcudart.so.13" | awk '$2 == "T" {print $3}' >"$tmp/cudart"
nm -D --defined-only "$BUILD_DIR/sim/libcuda.so.1" | awk '$2 == "T" {print $3}' >"$tmp/cuda"
nm -D --defined-only "$real_cudart" | awk '$2 == "T" {print $3}' >"$tmp/real_cudart"
missing=""; unversioned=""; unreal=""
while read -r lib name; do
    if [ "$lib" = CUDART ]; then
        grep -qx "$name@@libcudart.so.13" "$tmp/cudart" || missing="$missing $name"
        grep -qx "$name@@libcudart.so.13" "$tmp/real_cudart" || unreal="$unreal $name"
    else
        grep -qx "$name" "$tmp/cuda" || missing="$missing $name"
    fi
done <"$tmp/hooks"
check "common/hooks.def names runtime and driver functions ($(wc -l <"$tmp/hooks") of them)" \
    "[ \$(wc -l <\"$tmp/hooks\") -gt 50 ]"
check "every one is exported by the simulated libraries${missing:+ (missing:$missing)}" "[ -z \"$missing\" ]"
check "the runtime's are names of the real libcudart.so.13${unreal:+ (not:$unreal)}" "[ -z \"$unreal\" ]"
# The version node applies to every runtime export, the new ones included.
grep -v '@@libcudart.so.13$' "$tmp/cudart" | grep -E '^(cuda|__cuda)' >"$tmp/unversioned" || true
check "no runtime function is exported without the version node" "[ ! -s \"$tmp/unversioned\" ]"
# The driver's exports are the real libcuda's names (the import library
# lists them), and the module, launch, copy and capture entry points that
# NVIDIA's libraries reach through cuGetProcAddress are among them, each
# with its per-thread twin.
real_cuda="${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so"
nm -D --defined-only "$real_cuda" | awk '$2 == "T" {print $3}' >"$tmp/real_cuda"
grep -E '^cu' "$tmp/cuda" | grep -vxF -f "$tmp/real_cuda" >"$tmp/unreal_cuda" || true
check "the driver's are names of the real libcuda.so.1$( [ -s "$tmp/unreal_cuda" ] && echo " (not: $(tr '\n' ' ' <"$tmp/unreal_cuda"))")" \
    "[ ! -s \"$tmp/unreal_cuda\" ]"
absent=""
for name in cuModuleLoadData cuModuleLoadDataEx cuModuleLoadFatBinary cuModuleUnload cuModuleGetFunction \
    cuLibraryLoadData cuLibraryUnload cuLibraryGetKernel cuKernelGetFunction cuFuncGetParamInfo cuFuncGetName \
    cuLaunchKernel cuLaunchKernel_ptsz cuLaunchKernelEx cuLaunchKernelEx_ptsz cuLaunchCooperativeKernel \
    cuLaunchCooperativeKernel_ptsz cuMemsetD16_v2 cuMemsetD16_v2_ptds cuMemsetD16Async cuMemsetD16Async_ptsz \
    cuMemsetD2D8_v2 cuMemsetD2D16_v2 cuMemsetD2D32_v2 cuMemsetD2D32_v2_ptds cuMemsetD2D8Async cuMemsetD2D32Async_ptsz \
    cuMemcpy2D_v2 cuMemcpy2D_v2_ptds cuMemcpy2DAsync_v2 cuMemcpy2DAsync_v2_ptsz cuMemcpy2DUnaligned_v2 \
    cuMemcpy3D_v2 cuMemcpy3D_v2_ptds cuMemcpy3DAsync_v2 cuMemcpy3DAsync_v2_ptsz cuMemcpyPeer cuMemcpyPeer_ptds \
    cuMemcpyPeerAsync cuMemcpyPeerAsync_ptsz cuMemcpyHtoD_v2_ptds cuMemcpyHtoDAsync_v2_ptsz cuMemsetD8_v2_ptds \
    cuStreamBeginCapture_v2 cuStreamGetCaptureInfo_v3 cuStreamGetCaptureInfo_v3_ptsz cuGraphInstantiateWithFlags \
    cuGraphLaunch cuGraphExecDestroy cuGraphDestroy; do
    grep -qx "$name" "$tmp/cuda" || absent="$absent $name"
done
check "the driver exports its modules, launches, copies and capture calls${absent:+ (missing:$absent)}" "[ -z \"$absent\" ]"
# cuRAND's hooked functions: exported by the simulated libcurand.so.10 under
# the real version node, and names the real library exports.
real_curand="${CUDA_HOME:-/usr/local/cuda}/lib64/libcurand.so.10"
grep -oE 'SN_(HOOK|HOOK_PLAIN|REAL_ONLY)\(CURAND, [^,]+, [A-Za-z0-9_]+' "$hooks" | sed -E 's/.*, //' >"$tmp/rand_hooks"
nm -D --defined-only "$BUILD_DIR/sim/libcurand.so.10" | awk '$2 == "T" {print $3}' >"$tmp/curand"
rand_missing=""; rand_unreal=""
while read -r name; do
    grep -qx "$name@@libcurand.so.10" "$tmp/curand" || rand_missing="$rand_missing $name"
    if [ -e "$real_curand" ]; then
        nm -D --defined-only "$real_curand" | awk '$2 == "T" {print $3}' | grep -qx "$name@@libcurand.so.10" ||
            rand_unreal="$rand_unreal $name"
    fi
done <"$tmp/rand_hooks"
check "common/hooks.def names cuRAND functions ($(wc -l <"$tmp/rand_hooks") of them)" "[ \$(wc -l <\"$tmp/rand_hooks\") -ge 10 ]"
check "every one is exported by the simulated libcurand.so.10${rand_missing:+ (missing:$rand_missing)}" "[ -z \"$rand_missing\" ]"
check "they are names of the real libcurand.so.10${rand_unreal:+ (not:$rand_unreal)}" "[ -z \"$rand_unreal\" ]"
grep -v '@@libcurand.so.10$' "$tmp/curand" | grep -E '^curand' >"$tmp/rand_unversioned" || true
check "no cuRAND function is exported without the version node" "[ ! -s \"$tmp/rand_unversioned\" ]"
