/* This thread's steps of CPU states, as the C++ step makes them (csrc/library.cpp), so that a call that raises after
 * stepping gives its blocks back (docs/guarantees.md, "A call that raises"). The CPython module (csrc/module.c) hands
 * them to torch_rngx/_step.py: a call notes rngx_steps_made() before it draws and, if it raises, asks
 * rngx_give_back() for the blocks it took. */
#ifndef RNGX_STEPS_H
#define RNGX_STEPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A step: the key it returned (the state before it) and the blocks it moved the state past. */
typedef struct rngx_step {
  int64_t seed, offset;
  uint64_t blocks;
} rngx_step;

/* How many steps of CPU states this thread has made. */
uint64_t rngx_steps_made(void);

/* Gives back, newest first, this thread's steps after its first `since` of the CPU state whose data is at `state`
 * (a live [seed, offset] tensor's): each one only while the state stands where that step left it, so blocks another
 * thread has drawn past are never handed out twice; it stops at the first that cannot be given back. Writes the
 * steps given back to `given` (up to `max`) and returns their count. Only the newest RNGX_STEPS_KEPT steps of a
 * thread are kept. */
int rngx_give_back(uint64_t since, void *state, rngx_step *given, int max);

#define RNGX_STEPS_KEPT 64

#ifdef __cplusplus
}
#endif

#endif
