// workers.js: the main thread and 3 worker threads each burn a fixed
// amount of JavaScript work; prints the sums in worker order.
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
function burn(seed, n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s + Math.sqrt(i + seed) * 7) % 1000003;
  return Math.round(s);
}
const N = Number(process.argv[2] || 2e7);
if (isMainThread) {
  const results = [];
  let done = 0;
  for (let w = 0; w < 3; w++) {
    const worker = new Worker(__filename, { workerData: { seed: w, n: N }, argv: [String(N)] });
    worker.on('message', (sum) => {
      results[w] = sum;
      if (++done === 3) console.log('main', burn(9, N), 'workers', results.join(' '));
    });
  }
} else {
  parentPort.postMessage(burn(workerData.seed, workerData.n));
}
