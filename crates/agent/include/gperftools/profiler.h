/* cpuprof's libcpuprof.so: gperftools-compatible CPU profiler interface.
 *
 * Declarations compatible with gperftools' <gperftools/profiler.h>, so a
 * program written against gperftools compiles unchanged and links with
 * -lcpuprof instead of -lprofiler (or runs with LD_PRELOAD=libcpuprof.so).
 *
 * Profiling starts either at load time, when the CPUPROFILE environment
 * variable names the profile to write, or with ProfilerStart(). All threads
 * are sampled, including threads created before the start; no registration
 * is needed.
 */
#ifndef CPUPROF_GPERFTOOLS_PROFILER_H_
#define CPUPROF_GPERFTOOLS_PROFILER_H_

#include <time.h> /* time_t */

#ifndef PERFTOOLS_DLL_DECL
#define PERFTOOLS_DLL_DECL
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Options for ProfilerStartWithOptions. Zero-initialize it. */
struct ProfilerOptions {
  /* When not NULL, called for each sample from the signal handler of the
   * interrupted thread (so it must be async-signal-safe); the sample is kept
   * only when it returns nonzero. */
  int (*filter_in_thread)(void *arg);
  void *filter_in_thread_arg;
};

/* Starts profiling all threads; the profile is written to fname at
 * ProfilerStop, ProfilerFlush, exit, and on SIGTERM/SIGINT/SIGHUP. Returns
 * nonzero on success, 0 if profiling is already running or fname cannot be
 * created. The rate comes from CPUPROFILE_FREQUENCY (default 100 Hz). */
PERFTOOLS_DLL_DECL int ProfilerStart(const char *fname);

/* ProfilerStart with options; options may be NULL. */
PERFTOOLS_DLL_DECL int ProfilerStartWithOptions(const char *fname,
                                                const struct ProfilerOptions *options);

/* Stops profiling and writes the profile. Does nothing if not running. */
PERFTOOLS_DLL_DECL void ProfilerStop(void);

/* Writes the profile with all samples so far; profiling continues. */
PERFTOOLS_DLL_DECL void ProfilerFlush(void);

/* Deprecated no-ops, kept for source compatibility. */
PERFTOOLS_DLL_DECL void ProfilerEnable(void);
PERFTOOLS_DLL_DECL void ProfilerDisable(void);

/* Nonzero while profiling (every thread is then sampled). */
PERFTOOLS_DLL_DECL int ProfilingIsEnabledForAllThreads(void);

/* Accepted for compatibility: every thread is sampled without it. Calling
 * it arms the calling thread immediately. */
PERFTOOLS_DLL_DECL void ProfilerRegisterThread(void);

/* The profiler's current status. */
struct ProfilerState {
  int enabled;               /* nonzero while profiling */
  time_t start_time;         /* when profiling started */
  char profile_name[1024];   /* the profile being written, or "" */
  int samples_gathered;      /* samples taken so far in this session */
};
PERFTOOLS_DLL_DECL void ProfilerGetCurrentState(struct ProfilerState *state);

/* Stores up to max_depth return addresses of a stack in result (leaf first),
 * skipping skip_count frames; returns how many were stored. uc is the
 * ucontext_t a signal handler receives (the interrupted stack), or NULL for
 * the caller's own stack. Async-signal-safe. Returns 0 before profiling has
 * been started once in the process. */
PERFTOOLS_DLL_DECL int ProfilerGetStackTrace(void **result, int max_depth,
                                             int skip_count, const void *uc);

#ifdef __cplusplus
}
#endif

#endif /* CPUPROF_GPERFTOOLS_PROFILER_H_ */
