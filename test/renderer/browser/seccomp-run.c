/*
 * Runs a program under a seccomp filter, as a container runtime loads a Localhost profile
 * (charts/tintype/files/seccomp/tintype-chromium.json) for the browser container. The test turns
 * the profile into lines this reads (seccomp-profile.test.ts): the first `default ACTION`, then
 * one rule a line, `ACTION NAME COUNT` followed by COUNT conditions `INDEX OP A B`. ACTION is a
 * libseccomp action value, OP a libseccomp comparison. Usage: seccomp-run RULES PROGRAM [ARG...].
 * Built against the system's libseccomp.so.2 with its declarations here (no headers needed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *scmp_filter_ctx;
struct scmp_arg_cmp {
  unsigned int arg;
  int op;
  uint64_t datum_a;
  uint64_t datum_b;
};
extern scmp_filter_ctx seccomp_init(uint32_t def_action);
extern int seccomp_syscall_resolve_name(const char *name);
extern int seccomp_rule_add_array(scmp_filter_ctx ctx, uint32_t action, int syscall, unsigned int arg_cnt, const struct scmp_arg_cmp *arg_array);
extern int seccomp_load(scmp_filter_ctx ctx);

#define MAX_ARGS 6

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: seccomp-run RULES PROGRAM [ARG...]\n");
    return 2;
  }
  FILE *rules = fopen(argv[1], "r");
  if (rules == NULL) {
    perror("seccomp-run: rules");
    return 2;
  }
  unsigned long def;
  if (fscanf(rules, " default %lx", &def) != 1) {
    fprintf(stderr, "seccomp-run: no default action\n");
    return 2;
  }
  scmp_filter_ctx ctx = seccomp_init((uint32_t)def);
  if (ctx == NULL) {
    fprintf(stderr, "seccomp-run: seccomp_init failed\n");
    return 2;
  }
  unsigned long action;
  char name[128];
  unsigned int count;
  while (fscanf(rules, " %lx %127s %u", &action, name, &count) == 3) {
    struct scmp_arg_cmp conditions[MAX_ARGS];
    if (count > MAX_ARGS) return 2;
    for (unsigned int i = 0; i < count; i++) {
      unsigned long long a, b;
      if (fscanf(rules, " %u %d %llu %llu", &conditions[i].arg, &conditions[i].op, &a, &b) != 4) return 2;
      conditions[i].datum_a = a;
      conditions[i].datum_b = b;
    }
    int nr = seccomp_syscall_resolve_name(name);
    /* A call this architecture does not have: nothing to filter. */
    if (nr == -1) continue;
    int rc = seccomp_rule_add_array(ctx, (uint32_t)action, nr, count, conditions);
    /* The default action again, or a pseudo-call of another architecture: nothing to add. */
    if (rc != 0 && nr >= 0 && (uint32_t)action != (uint32_t)def) {
      fprintf(stderr, "seccomp-run: rule for %s refused (%d)\n", name, rc);
      return 2;
    }
  }
  fclose(rules);
  if (seccomp_load(ctx) != 0) {
    fprintf(stderr, "seccomp-run: seccomp_load failed\n");
    return 2;
  }
  execvp(argv[2], argv + 2);
  perror("seccomp-run: exec");
  return 127;
}
