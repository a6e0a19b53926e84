#!/usr/bin/env python3
"""Compiles each dumped kernel (kernel.cu + meta.txt + arg<k>.bin, written by
the hidden tests in tests/kernel_emulation_dump_test.cpp) as host C++ against
shim.h, runs its whole grid, and compares every output with the expected
bytes (the reference executor's, or an ONNX node test's): integers and bools
exactly, floats with gpu_check.h's tolerances.

    GRAPHC_EMU_DIR=/tmp/graphc-emu build/tests/graphc_tests "[.dump-dm-kernels]"
    .venv/bin/python scripts/kernel_emulator/run.py /tmp/graphc-emu [case numbers...]
"""
import concurrent.futures as cf
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MAIN = r'''
#include "shim.h"
#include "kernel.cpp"
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
template <class... A, size_t... I> void call_impl(void (*f)(A...), void** b, std::index_sequence<I...>) { f(static_cast<A>(b[I])...); }
template <class... A> void call(void (*f)(A...), void** b) { call_impl(f, b, std::index_sequence_for<A...>{}); }
int main(int argc, char** argv) {
  const char* dir = argv[1];
  unsigned g[3], b[3];
  for (int i = 0; i < 3; ++i) g[i] = atoi(argv[2 + i]);
  for (int i = 0; i < 3; ++i) b[i] = atoi(argv[5 + i]);
  int n = atoi(argv[8]);
  std::vector<void*> bufs(n); std::vector<size_t> sizes(n); std::vector<int> outs(n);
  for (int a = 0; a < n; ++a) {
    sizes[a] = strtoull(argv[9 + 2 * a], 0, 10); outs[a] = atoi(argv[10 + 2 * a]);
    bufs[a] = aligned_alloc(256, (sizes[a] + 256) / 256 * 256);
    if (outs[a]) memset(bufs[a], 0xCD, sizes[a]);  // unwritten elements show
    else { std::ifstream f(std::string(dir) + "/arg" + std::to_string(a) + ".bin", std::ios::binary); f.read((char*)bufs[a], sizes[a]); }
  }
  gridDim = {g[0], g[1], g[2]}; blockDim = {b[0], b[1], b[2]};
  unsigned nt = b[0] * b[1] * b[2];
  for (unsigned z = 0; z < g[2]; ++z) for (unsigned y = 0; y < g[1]; ++y) for (unsigned x = 0; x < g[0]; ++x) {
    dim3_ bi{x, y, z};
    auto run = [&](unsigned t) {
      blockIdx = bi; threadIdx = {t % b[0], (t / b[0]) % b[1], t / (b[0] * b[1])};
      call(&ENTRY, bufs.data());
    };
    if (SYNC) {
      g_block_barrier = std::make_unique<std::barrier<>>(nt);
      g_warp_barriers.clear();
      for (unsigned w = 0; w < (nt + 31) / 32; ++w) g_warp_barriers.push_back(std::make_unique<std::barrier<>>(std::min(32u, nt - 32 * w)));
      std::vector<std::thread> ts; for (unsigned t = 0; t < nt; ++t) ts.emplace_back(run, t);
      for (auto& t : ts) t.join();
    } else {
      for (unsigned t = 0; t < nt; ++t) run(t);
    }
  }
  for (int a = 0; a < n; ++a) if (outs[a]) { std::ofstream f(std::string(dir) + "/got" + std::to_string(a) + ".bin", std::ios::binary); f.write((char*)bufs[a], sizes[a]); }
}
'''
NP = {'float32': np.float32, 'float64': np.float64, 'int8': np.int8, 'int16': np.int16,
      'int32': np.int32, 'int64': np.int64, 'uint8': np.uint8, 'uint16': np.uint16,
      'uint32': np.uint32, 'uint64': np.uint64, 'bool': np.uint8, 'float16': np.float16,
      'bfloat16': np.uint16}


def load(path, dt):
    a = np.fromfile(path, dtype=NP[dt])
    if dt == 'bfloat16':
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a


def run_case(root, d):
    p = os.path.join(root, d)
    lines = open(os.path.join(p, 'meta.txt')).read().split('\n')
    name, entry, launch = lines[0], lines[1], lines[2].split()
    nargs, rtol = lines[3].split()
    nargs, rtol = int(nargs), float(rtol)
    args = [l.split() for l in lines[4:4 + nargs]]
    src = open(os.path.join(p, 'kernel.cu')).read()
    sync = 1 if ('__syncthreads' in src or 'shfl' in src) else 0
    open(os.path.join(p, 'kernel.cpp'), 'w').write(src)
    open(os.path.join(p, 'main.cpp'), 'w').write(MAIN.replace('ENTRY', entry).replace('SYNC', str(sync)))
    exe = os.path.join(p, 'emulated')
    r = subprocess.run(['g++', '-std=c++20', '-O1', '-ffp-contract=off', '-w', '-I' + HERE, '-I' + REPO,
                        '-I' + p, os.path.join(p, 'main.cpp'), '-o', exe, '-pthread'],
                       capture_output=True, text=True)
    if r.returncode:
        return name, 'COMPILE ' + r.stderr[:1500]
    cmd = [exe, p] + launch + [str(nargs)]
    for kind, _, size in args:
        cmd += [size, '1' if kind == 'out' else '0']
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode:
        return name, 'RUN rc %d %s' % (r.returncode, r.stderr[:500])
    msgs = []
    for a, (kind, dt, _) in enumerate(args):
        if kind != 'out':
            continue
        want = load(os.path.join(p, 'arg%d.bin' % a), dt)
        got = load(os.path.join(p, 'got%d.bin' % a), dt)
        if dt in ('float32', 'float64', 'float16', 'bfloat16'):
            tol = {'float16': 1 / 1024, 'bfloat16': 1 / 128}.get(dt, rtol)
            w, g = want.astype(np.float64), got.astype(np.float64)
            ok = (np.isnan(w) & np.isnan(g)) | (w == g) | (np.abs(w - g) <= 1e-5 + tol * np.abs(w))
        else:
            ok = want == got
        if not ok.all():
            bad = np.nonzero(~ok)[0]
            msgs.append('output arg %d: %d of %d differ, first at %d: want %s got %s' %
                        (a, len(bad), len(ok), bad[0], want[bad[0]], got[bad[0]]))
    return name, '; '.join(msgs) if msgs else 'OK'


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '/tmp/graphc-emu'
    dirs = sorted((d for d in os.listdir(root) if d.isdigit()), key=int)
    if len(sys.argv) > 2:
        dirs = [d for d in dirs if d in sys.argv[2:]]
    failed = 0
    with cf.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        for d, (name, res) in zip(dirs, ex.map(lambda d: run_case(root, d), dirs)):
            failed += res != 'OK'
            print(('  ' if res == 'OK' else '!!'), d, name, ':', res, flush=True)
    print('%d of %d kernels match' % (len(dirs) - failed, len(dirs)))
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
