/* run_engine ENGINE: loads a graphc engine through the C API, lists its
 * bindings, runs it once on zero-filled inputs and prints the first values
 * of every float32 output. Exit status 0 on success, 1 on any error (the
 * message from graphc_last_error goes to stderr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <graphc/graphc_runtime.h>

static int check(graphc_status status, const char* what) {
  if (status == GRAPHC_OK) return 0;
  fprintf(stderr, "run_engine: %s: %s: %s\n", what, graphc_status_name(status),
          graphc_last_error());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s ENGINE\n", argv[0]);
    return 2;
  }
  graphc_engine* engine = NULL;
  graphc_context* context = NULL;
  void** buffers = NULL;
  uint64_t* sizes = NULL;
  int32_t n = 0, n_in = 0, i;
  int failed = 1;
  if (check(graphc_engine_load(argv[1], &engine), "loading the engine")) goto done;
  if (check(graphc_engine_num_bindings(engine, &n), "counting bindings")) goto done;
  buffers = calloc((size_t)n + 1, sizeof *buffers);
  sizes = calloc((size_t)n + 1, sizeof *sizes);
  if (!buffers || !sizes) goto done;
  for (i = 0; i < n; ++i) {
    graphc_binding_info info;
    int32_t d;
    if (check(graphc_engine_binding_info(engine, i, &info), "reading a binding")) goto done;
    printf("%s %-20s %-8s [", info.is_input ? "input " : "output", info.name,
           graphc_dtype_name(info.dtype));
    for (d = 0; d < info.rank; ++d) printf(d ? ", %lld" : "%lld", (long long)info.shape[d]);
    printf("]\n");
    n_in += info.is_input;
    sizes[i] = info.bytes;
    buffers[i] = calloc(info.bytes ? (size_t)info.bytes : 1, 1); /* zero inputs */
    if (!buffers[i]) goto done;
  }
  if (check(graphc_context_create(engine, &context), "creating a context")) goto done;
  if (check(graphc_context_run_host(context, (const void* const*)buffers, sizes, n_in,
                                    buffers + n_in, sizes + n_in, n - n_in),
            "running"))
    goto done;
  for (i = n_in; i < n; ++i) {
    graphc_binding_info info;
    uint64_t k, count;
    if (check(graphc_engine_binding_info(engine, i, &info), "reading a binding")) goto done;
    if (info.dtype != GRAPHC_DTYPE_FLOAT32) continue;
    count = info.bytes / 4;
    printf("%s:", info.name);
    for (k = 0; k < count && k < 8; ++k) {
      float v;
      memcpy(&v, (const char*)buffers[i] + 4 * k, 4);
      printf(" %g", v);
    }
    printf(count > 8 ? " ...\n" : "\n");
  }
  failed = 0;
done:
  graphc_context_destroy(context);
  graphc_engine_destroy(engine);
  if (buffers)
    for (i = 0; i < n; ++i) free(buffers[i]);
  free(buffers);
  free(sizes);
  return failed;
}
