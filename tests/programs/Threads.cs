// Threads.exe: work spread over several threads (Thread, Parallel, tasks, locks,
// Monitor.Wait/Pulse, thread statics), every result stored per worker and printed by
// the main thread in a fixed order after all workers are joined. Exit code 12.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug- -r:System.Core.dll
using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Threads
{
    static class Program
    {
        static int Main()
        {
            Raw();
            ParallelLoops();
            Tasks();
            Locks();
            ProducerConsumer();
            ThreadStatics();
            Failures();
            Console.WriteLine("done");
            return 12;
        }

        static bool IsPrime(int n)
        {
            if (n < 2) return false;
            for (int d = 2; d * d <= n; d++)
                if (n % d == 0) return false;
            return true;
        }

        static int CollatzSteps(long n)
        {
            int steps = 0;
            while (n != 1)
            {
                n = n % 2 == 0 ? n / 2 : 3 * n + 1;
                steps++;
            }
            return steps;
        }

        // ---- System.Threading.Thread -----------------------------------------------

        sealed class PrimeCounter
        {
            readonly int from, to;
            public int Count;
            public PrimeCounter(int from, int to) { this.from = from; this.to = to; }
            public void Run()
            {
                for (int n = from; n < to; n++)
                    if (IsPrime(n)) Count++;
            }
        }

        static void Raw()
        {
            Console.WriteLine("== threads");
            var counters = new PrimeCounter[4];
            var threads = new Thread[4];
            for (int i = 0; i < threads.Length; i++)
            {
                counters[i] = new PrimeCounter(i * 5000, (i + 1) * 5000);
                threads[i] = new Thread(counters[i].Run);
                threads[i].Start();
            }
            foreach (Thread t in threads)
                t.Join();
            Console.WriteLine("primes per range " + string.Join(",", counters.Select(c => c.Count)) + " total " + counters.Sum(c => c.Count));
            // A thread started with a parameter.
            var squares = new long[3];
            var param = new Thread(o =>
            {
                int k = (int)o;
                for (int i = 0; i < squares.Length; i++)
                    squares[i] = (long)(k + i) * (k + i);
            });
            param.Start(1000);
            param.Join();
            Console.WriteLine("parameterized " + string.Join(",", squares));
        }

        // ---- Parallel ----------------------------------------------------------------

        static void ParallelLoops()
        {
            Console.WriteLine("== parallel");
            var steps = new int[200];
            Parallel.For(0, steps.Length, i => { steps[i] = CollatzSteps(i + 1); });
            Console.WriteLine("collatz sum " + steps.Sum() + " max " + steps.Max() + " at " + (Array.IndexOf(steps, steps.Max()) + 1));
            long total = 0;
            Parallel.ForEach(
                Enumerable.Range(1, 1000),
                () => 0L,
                (n, state, local) => local + n * n,
                local => Interlocked.Add(ref total, local));
            Console.WriteLine("sum of squares " + total);
            var words = new[] { "alpha", "beta", "gamma", "delta", "epsilon" };
            var lengths = new int[words.Length];
            Parallel.Invoke(
                () => lengths[0] = words[0].Length,
                () => lengths[1] = words[1].Length,
                () => lengths[2] = words[2].Length,
                () => lengths[3] = words[3].Length,
                () => lengths[4] = words[4].Length);
            Console.WriteLine("invoke " + string.Join(",", lengths));
            int[] plinq = Enumerable.Range(1, 100).AsParallel().Where(IsPrime).Select(p => p * 2).OrderBy(x => x).ToArray();
            Console.WriteLine("plinq " + plinq.Length + " last " + plinq[plinq.Length - 1]);
        }

        // ---- tasks -------------------------------------------------------------------

        static async Task<int> SumAsync(int from, int to)
        {
            int sum = 0;
            for (int i = from; i < to; i++)
            {
                if (i % 50 == 0)
                    await Task.Yield();
                sum += i;
            }
            return sum;
        }

        static void Tasks()
        {
            Console.WriteLine("== tasks");
            var tasks = new Task<int>[8];
            for (int i = 0; i < tasks.Length; i++)
            {
                int k = i;
                tasks[i] = Task.Run(() => CollatzSteps(27 + k));
            }
            Task.WaitAll(tasks);
            Console.WriteLine("run " + string.Join(",", tasks.Select(t => t.Result)));
            Task<string> chain = Task.Run(() => 6)
                .ContinueWith(t => t.Result * 7)
                .ContinueWith(t => "answer " + t.Result);
            Console.WriteLine("continuation " + chain.Result);
            var asyncs = Enumerable.Range(0, 5).Select(i => SumAsync(i * 100, (i + 1) * 100)).ToArray();
            Console.WriteLine("async " + string.Join(",", Task.WhenAll(asyncs).Result));
            var factory = Task.Factory.StartNew(() => IsPrime(7919), TaskCreationOptions.LongRunning);
            Console.WriteLine("long running " + factory.Result);
        }

        // ---- locks -------------------------------------------------------------------

        static readonly object Gate = new object();
        static int guarded;
        static long interlocked;

        static void Locks()
        {
            Console.WriteLine("== locks");
            var threads = new Thread[4];
            for (int i = 0; i < threads.Length; i++)
            {
                threads[i] = new Thread(() =>
                {
                    for (int n = 0; n < 10000; n++)
                    {
                        lock (Gate)
                        {
                            guarded++;
                        }
                        Interlocked.Increment(ref interlocked);
                    }
                });
                threads[i].Start();
            }
            foreach (Thread t in threads)
                t.Join();
            Console.WriteLine("lock " + guarded + " interlocked " + interlocked);
            var rw = new ReaderWriterLockSlim();
            var seen = new int[3];
            var readers = Enumerable.Range(0, 3).Select(i => new Thread(() =>
            {
                rw.EnterReadLock();
                try { seen[i] = guarded / 1000; }
                finally { rw.ExitReadLock(); }
            })).ToArray();
            foreach (Thread t in readers) t.Start();
            foreach (Thread t in readers) t.Join();
            Console.WriteLine("readers " + string.Join(",", seen));
        }

        // ---- Monitor.Wait / Pulse ------------------------------------------------------

        static void ProducerConsumer()
        {
            Console.WriteLine("== producer consumer");
            var queue = new Queue<int>();
            const int Items = 200;
            long consumed = 0;
            int count = 0;
            var consumer = new Thread(() =>
            {
                while (true)
                {
                    int item;
                    lock (queue)
                    {
                        while (queue.Count == 0)
                            Monitor.Wait(queue);
                        item = queue.Dequeue();
                    }
                    if (item < 0)
                        break;
                    consumed += item;
                    count++;
                }
            });
            consumer.Start();
            for (int i = 1; i <= Items; i++)
            {
                lock (queue)
                {
                    queue.Enqueue(i);
                    Monitor.Pulse(queue);
                }
            }
            lock (queue)
            {
                queue.Enqueue(-1);
                Monitor.Pulse(queue);
            }
            consumer.Join();
            Console.WriteLine("consumed " + count + " items, sum " + consumed);
            using (var done = new CountdownEvent(3))
            {
                var flags = new bool[3];
                for (int i = 0; i < 3; i++)
                {
                    int k = i;
                    ThreadPool.QueueUserWorkItem(_ => { flags[k] = true; done.Signal(); });
                }
                done.Wait();
                Console.WriteLine("pool items " + string.Join(",", flags));
            }
        }

        // ---- thread statics ------------------------------------------------------------

        [ThreadStatic] static int perThread;

        static void ThreadStatics()
        {
            Console.WriteLine("== thread statics");
            perThread = -1;
            var results = new int[3];
            var local = new ThreadLocal<string>(() => "fresh");
            var locals = new string[3];
            var threads = new Thread[3];
            for (int i = 0; i < threads.Length; i++)
            {
                int k = i;
                threads[i] = new Thread(() =>
                {
                    for (int n = 0; n <= k * 10; n++)
                        perThread += n;
                    results[k] = perThread;
                    locals[k] = local.Value + k;
                    local.Value = "changed";
                });
                threads[i].Start();
            }
            foreach (Thread t in threads)
                t.Join();
            Console.WriteLine("thread static " + string.Join(",", results) + " main " + perThread);
            Console.WriteLine("thread local " + string.Join(",", locals) + " main " + local.Value);
        }

        // ---- exceptions on other threads -----------------------------------------------

        static void Failures()
        {
            Console.WriteLine("== failures");
            Task<int> failing = Task.Run(() =>
            {
                if (IsPrime(13)) throw new InvalidOperationException("task failed");
                return 1;
            });
            try
            {
                failing.Wait();
            }
            catch (AggregateException e)
            {
                Console.WriteLine("aggregate " + e.InnerExceptions.Count + " " + e.InnerException.Message);
            }
            try
            {
                Parallel.For(0, 20, i =>
                {
                    if (i == 13) throw new ArgumentException("iteration " + i);
                });
            }
            catch (AggregateException e)
            {
                Console.WriteLine("parallel " + e.InnerExceptions.Count + " " + e.InnerException.Message);
            }
            string caughtInThread = null;
            var t = new Thread(() =>
            {
                try
                {
                    throw new FormatException("inside thread");
                }
                catch (FormatException e)
                {
                    caughtInThread = e.Message;
                }
            });
            t.Start();
            t.Join();
            Console.WriteLine("thread caught " + caughtInThread);
        }
    }
}
