#!/usr/bin/env node
// Runs many .onnx models in onnxruntime (npm's onnxruntime-node, CPU) in
// one process, for tests/onnx/test_backend_corpus.py: starting node and
// loading onnxruntime once instead of once per model.
//
// Usage: node run_batch.js JOBS.json
// JOBS.json: [{"id": ID, "model": FILE.onnx, "inputs": [{"name": N, "file": F.npy}],
//              "outdir": DIR}, ...]
// For each job, in order: runs the model on the inputs (.npy, read as
// run_model.js reads them) and writes its outputs, in the session's output
// order, to DIR/out_<k>.npy; prints one JSON line per job:
// {"id": ID, "ok": true, "outputs": [names]} or {"id": ID, "ok": false,
// "error": MESSAGE} (a model onnxruntime refuses, an input or output type
// .npy cannot carry). Comparing is the caller's job. Exit 0 unless JOBS.json
// cannot be read.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { readNpy, writeNpy } = require('./run_model.js');

async function runJob(job) {
  const session = await ort.InferenceSession.create(job.model);
  try {
    const feeds = {};
    for (const i of job.inputs) feeds[i.name] = readNpy(i.file);
    const results = await session.run(feeds);
    session.outputNames.forEach((name, k) => {
      writeNpy(path.join(job.outdir, 'out_' + k + '.npy'), results[name]);
    });
    return session.outputNames;
  } finally {
    await session.release();
  }
}

async function main() {
  const jobs = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  for (const job of jobs) {
    let line;
    try {
      line = { id: job.id, ok: true, outputs: await runJob(job) };
    } catch (e) {
      line = { id: job.id, ok: false, error: String(e && e.message ? e.message : e).slice(0, 300) };
    }
    process.stdout.write(JSON.stringify(line) + '\n');
  }
}

main().catch((e) => {
  console.error(String(e && e.message ? e.message : e));
  process.exit(1);
});
