// The candidate's preload (BENCH_IMPLS=…,candidate): the benchmark starts
// function-platform as built with `node [BENCH_CANDIDATE_NODE_FLAGS] --import
// dist/bench/candidate.js dist/main.js` and measures it in turns beside
// function-platform. Put an experiment here (code that runs before main.js
// loads) to measure it end to end before it goes into src/. Left empty, the
// candidate differs from function-platform only in its Node flags.
export {};
