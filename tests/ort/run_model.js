#!/usr/bin/env node
// Runs an .onnx model in onnxruntime (npm's onnxruntime-node, CPU) on a
// vector's inputs and compares its outputs with the expected ones.
//
// Usage: node run_model.js [--write] MODEL.onnx VECTOR_DIR
// VECTOR_DIR holds reference_io.json ({"inputs": [{name, file, dtype, shape}],
// "outputs": [...]}) and the .npy files it names. Tolerance: |got - want| <=
// 1e-4 + 1e-4 * |want|. Exit 0 when every output matches, 1 otherwise; on
// success prints "ok max_abs_diff=D" (D over every output).
// --write: writes the model's outputs to the outputs' files instead (.npy
// format 1.0; how tests/onnx/test_model_zoo.py gets onnxruntime's outputs on
// the original model as the expected ones).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// .npy descr -> onnxruntime type and the typed array its data are read into
// (float16 as its bits); also used by run_batch.js.
const TYPES = {
  '<f4': ['float32', Float32Array], '<i4': ['int32', Int32Array],
  '<i8': ['int64', BigInt64Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
  '|b1': ['bool', Uint8Array], '<f8': ['float64', Float64Array], '<f2': ['float16', Uint16Array],
  '<i2': ['int16', Int16Array], '<u2': ['uint16', Uint16Array], '<u4': ['uint32', Uint32Array],
  '<u8': ['uint64', BigUint64Array],
};

// A .npy file (format 1.0 or 2.0, C order, little-endian) as an ort.Tensor.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(file + ': not a .npy file');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(file + ': Fortran order');
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',')
    .map((s) => s.trim()).filter((s) => s.length).map(Number);
  const start = hstart + hlen;
  const str = /^(<U|\|S)(\d+)$/.exec(descr);
  if (str) { // NumPy's fixed-width strings: ort's string tensors (JS strings)
    const width = Number(str[2]);
    const unit = str[1] === '<U' ? 4 : 1;
    const count = dims.reduce((a, b) => a * b, 1);
    const data = [];
    for (let i = 0; i < count; i++) {
      const at = start + i * width * unit;
      if (unit === 1) {
        let n = width;
        while (n > 0 && buf[at + n - 1] === 0) n--;
        data.push(buf.toString('utf8', at, at + n));
      } else {
        const cps = [];
        for (let k = 0; k < width; k++) cps.push(buf.readUInt32LE(at + 4 * k));
        while (cps.length && cps[cps.length - 1] === 0) cps.pop();
        data.push(String.fromCodePoint(...cps));
      }
    }
    return new ort.Tensor('string', data, dims);
  }
  const t = TYPES[descr];
  if (!t) throw new Error(file + ': dtype ' + descr);
  const bytes = buf.subarray(start);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  const data = new t[1](copy.buffer, 0, copy.length / t[1].BYTES_PER_ELEMENT);
  return new ort.Tensor(t[0], data, dims);
}

// An ort.Tensor as a .npy file (format 1.0, C order, little-endian).
function writeNpy(file, t) {
  if (t.type === 'string') { // as NumPy's <U<n>: UTF-32LE, NUL-padded to the longest
    const cps = Array.from(t.data, (x) => Array.from(x, (c) => c.codePointAt(0)));
    const width = Math.max(1, ...cps.map((c) => c.length));
    const data = Buffer.alloc(cps.length * width * 4);
    cps.forEach((c, i) => c.forEach((v, k) => data.writeUInt32LE(v, (i * width + k) * 4)));
    return writeNpyBytes(file, '<U' + width, t.dims, data);
  }
  const descr = Object.keys(TYPES).find((k) => TYPES[k][0] === t.type);
  if (!descr) throw new Error(file + ': dtype ' + t.type);
  writeNpyBytes(file, descr, t.dims,
                Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
}

function writeNpyBytes(file, descr, dims, data) {
  const shape = '(' + dims.join(', ') + (dims.length === 1 ? ',)' : ')');
  let header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ', }';
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), data]));
}

async function main() {
  const args = process.argv.slice(2);
  const write = args[0] === '--write';
  const [model, dir] = write ? args.slice(1) : args;
  if (!model || !dir) {
    console.error('usage: run_model.js [--write] MODEL.onnx VECTOR_DIR');
    process.exit(2);
  }
  const io = JSON.parse(fs.readFileSync(path.join(dir, 'reference_io.json'), 'utf8'));
  // TIO_ORT_OPT: onnxruntime's graphOptimizationLevel (default 'all');
  // 'disabled' runs a QDQ model as it says (dequantize, float, quantize)
  // rather than through fused integer kernels, which round differently.
  const opt = process.env.TIO_ORT_OPT || 'all';
  const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: opt });
  const feeds = {};
  for (const i of io.inputs) feeds[i.name] = readNpy(path.join(dir, i.file));
  const results = await session.run(feeds);
  if (write) {
    for (const o of io.outputs) {
      if (!results[o.name]) throw new Error(o.name + ': no such output');
      writeNpy(path.join(dir, o.file), results[o.name]);
    }
    process.exit(0);
  }
  let bad = 0;
  let maxAbs = 0;
  for (const o of io.outputs) {
    const want = readNpy(path.join(dir, o.file));
    const got = results[o.name];
    if (!got) {
      console.error(o.name + ': no such output');
      bad++;
      continue;
    }
    if (got.dims.join(',') !== want.dims.join(',')) {
      console.error(o.name + ': shape ' + got.dims + ' != ' + want.dims);
      bad++;
      continue;
    }
    let worst = 0;
    for (let k = 0; k < want.data.length; k++) {
      const g = Number(got.data[k]);
      const w = Number(want.data[k]);
      maxAbs = Math.max(maxAbs, Number.isNaN(g - w) ? Infinity : Math.abs(g - w));
      const d = Math.abs(g - w) - (1e-4 + 1e-4 * Math.abs(w));
      if (!(d <= 0)) worst = Math.max(worst, Number.isNaN(d) ? Infinity : d);
    }
    if (worst > 0) {
      console.error(o.name + ': values differ (worst excess ' + worst + ')');
      bad++;
    }
  }
  console.log(bad ? 'FAIL' : 'ok max_abs_diff=' + maxAbs);
  process.exit(bad ? 1 : 0);
}

module.exports = { readNpy, writeNpy };

if (require.main === module) {
  main().catch((e) => {
    console.error(String(e && e.message ? e.message : e));
    process.exit(1);
  });
}
