// The "candidate" of the benchmark (BENCH_IMPLS=…,candidate): function-platform
// as built, started with this preload (node --import dist/bench/candidate.js
// dist/main.js) and its own Node flags (BENCH_CANDIDATE_NODE_FLAGS). A slot to
// measure a proposal end to end, side by side with the product, before it
// goes into src/. The wire codec it first measured is now src/wire.ts; the
// preload is empty until the next experiment.
export {};
