/* The checkpoint journal as the C++ step sees it (csrc/library.cpp: rngx::take_). A process with Python has a
 * journal (torch_rngx/_engine/journal.py): inside a checkpointed region every draw is recorded, and a recomputation takes
 * the recorded keys back instead of stepping again. The CPython module (csrc/module.c) sets rngx_journal_hooks when
 * torch_rngx gives it the journal; in a process without Python it stays NULL and every step is the bare one. */
#ifndef RNGX_JOURNAL_H
#define RNGX_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rngx_journal {
  /* Nonzero when a draw may need the journal: saved-tensor hooks (a checkpoint's among them) are on this thread's
   * stack, or a backward pass is running. Zero is the common case, and costs no Python frame. */
  int (*open)(void);
  /* The journal's answer for a draw from the state whose data is at `owner`: 0, step and then record(); 1, key
   * holds the recorded key, to return without stepping; -1, refused, with why (NUL-terminated) in message. */
  int (*replay)(const void *owner, int64_t key[2], char *message, size_t size);
  /* Records the key of a draw that replay() answered 0 for: 0, or -1 with why in message. */
  int (*record)(const void *owner, const int64_t key[2], char *message, size_t size);
} rngx_journal;

/* Set once, at import; read on every step. */
extern const rngx_journal *rngx_journal_hooks;

#ifdef __cplusplus
}
#endif

#endif
