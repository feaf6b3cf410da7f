// The raw-Temporal baseline's worker for `npm run bench:runs`, in a process of its own as Cadre's worker is: one
// trivial activity per workflow, on the queue named by BASELINE_TASK_QUEUE.
import { NativeConnection, Worker } from '@temporalio/worker';

async function main() {
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const worker = await Worker.create({
    connection,
    taskQueue: process.env.BASELINE_TASK_QUEUE!,
    workflowsPath: require.resolve('./baseline-workflows'),
    activities: { trivial: async (n: number) => n },
  });
  process.once('SIGTERM', () => worker.shutdown());
  console.log('baseline worker ready');
  await worker.run();
  await connection.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
