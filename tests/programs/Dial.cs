// Dial.exe: a program driven line by line through stdin, so that a test can change the
// instrumentation of a RUNNING program (a profiler's ReJIT "dial": requests to re-JIT
// chosen methods with other IL, or to revert them to the file's IL) and observe the
// change at the next call. Every value below is a small int32 constant, so a `scale`
// (multiply the result by `factor`) or an `offset` (add `addend`) of any method shows
// in the next answer that prints it.
//
// Protocol: one command per line on stdin (surrounding blanks ignored); each is answered
// with zero or more lines on stdout and then a line `done`; stdout is flushed after
// every `done`. Nothing else is ever written to stdout, and nothing to stderr. At EOF
// or on `quit`, the program stops the threads of `start` if there are any (printing
// nothing for them), prints `bye` (no `done` after it) and exits with code 29. So with
// stdin closed it prints only `bye` (expected/Dial.out, what every test that runs each
// program without input sees).
//
//   round      one call of each of these, one line per call, in this order:
//                `Plain 10`        Dial.Values::Plain() returns 10
//                `Branches 40`     Dial.Values::Branches(2): two `ret`s (40 if its
//                                  argument is even, else 50); round passes 2
//                `Configured 20`   Dial.Values::Configured() returns 20 (a test
//                                  instruments it at its first JIT, then sets it back
//                                  to the file's IL through the dial)
//                `Caller 105`      Dial.Inline::Caller() returns Callee() + 100, where
//                                  Dial.Inline::Callee() returns 5
//   later      `Later 30`: Dial.Values::Later() returns 30. Nothing else calls it, so
//              before the first `later` it has never run (nor been JIT-compiled): a
//              test requests its ReJIT first (a pre-ReJIT) and the first call runs the
//              new IL.
//   hot N      calls Dial.Inline::Caller() N times (N >= 0) in a loop and prints
//              `hot N sum S`, S the sum of the results as int64 (105 * N unprofiled;
//              `hot 1000 sum 105000`). To make Caller hot (tier 1 with tiering on).
//   dynamic    the first time, defines a dynamic assembly (AssemblyBuilder.
//              DefineDynamicAssembly(new AssemblyName("DialDynamic"),
//              AssemblyBuilderAccess.Run)), module `DialDynamic`, public type
//              `Dyn.Emitted` with the public static method `int32 Value()` (IL:
//              ldc.i4.7; ret; NoInlining), creates the type and a Func<int> for the
//              method; every time, calls it and prints `Emitted 7`. A method of a
//              dynamic module: the runtime refuses to ReJIT it.
//   start T    starts T threads (1 <= T <= 64) that each call Dial.Values::Plain() and
//              then Dial.Inline::Caller() in a loop until `stop`, each keeping a count
//              per result of each method; returns when every thread has made at least
//              one call of each, and prints `started T`. While they run, `start`
//              prints `already started` (and starts nothing).
//   stop       sets the flag the threads poll (a volatile bool), joins them, merges
//              their counts and prints `calls C` (the calls of Plain and Caller made by
//              the threads, C >= 2T), then `seen NAME VALUE count N` for each distinct
//              (method, result), ordered by the method's name (ordinal: Caller before
//              Plain), then by value. Unprofiled: `seen Caller 105 count N` and
//              `seen Plain 10 count M`; the counts vary from run to run. Without
//              threads running it prints `not started`.
//   gc         GC.Collect(); GC.WaitForPendingFinalizers(); prints `gc`.
//   exit N     starts a thread that calls Environment.Exit(N) (0 <= N <= 255): the
//              process ends with code N from that thread, while the main thread waits
//              for the next line (answered `done` at once; nothing else is printed, and
//              the exit may come before or after the `done`). For tests of an exit that
//              does not come through Main returning.
//   throw      starts a thread that throws InvalidOperationException("Dial: thrown by
//              request") and does not catch it: the runtime prints it on stderr and
//              aborts the process (SIGABRT, status 134 from a shell), Main never returns.
//              Answered `done` at once, like `exit`.
//   quit       see above.
//   (empty)    an empty line is answered with `done` alone.
//   anything else
//              `unknown LINE` (the line, blanks trimmed); so is a `hot` or `start` whose
//              count is missing, not a number or out of range. The program goes on.
//
// Dial.in is a fixed script of the deterministic commands (round, later, dynamic twice,
// hot 1000, gc, an unknown command, round, quit); expected/Dial.in.out is the unprofiled
// output of a run with Dial.in as stdin.
//
// Every method is NoInlining (constructors included) except Dial.Inline::Callee, a tiny static method that the
// JIT inlines into Caller whenever it compiles Caller optimized: with tiered compilation
// off (COMPlus_TieredCompilation=0), Callee is never JIT-compiled on its own (the perf
// map of a run lists Caller, not Callee), so an edit of Callee shows in Caller only
// once Caller is compiled again (a ReJIT of Callee with its inliners). With tiering on,
// Caller is first compiled at tier 0, which inlines nothing and calls Callee, so Callee
// is compiled on its own too (at tier 0, and at tier 1 once it is hot); after `hot`
// (30 calls, then the call-counting delay) Caller is compiled again at tier 1, with
// Callee inlined. The methods with loops (Main, Hot, Worker::Run, ...) are compiled
// optimized at once, tiering or not (CoreCLR 3.1 does not quick-JIT loops).
//
// Unprofiled on CoreCLR 3.1.23 with COMPlus_TieredCompilation=0 and
// COMPlus_PerfMapEnabled=1, /tmp/perf-<pid>.map lists Caller (and every other method
// of Dial.* that ran, and Dyn.Emitted::Value) but not Callee.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug- (Mono's reference assemblies have
// AssemblyBuilder.DefineDynamicAssembly; CoreCLR 3.1 resolves it through its facades).
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Reflection;
using System.Reflection.Emit;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Dial
{
    static class Values
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Plain()
        {
            return 10;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Branches(int x)
        {
            if (x % 2 == 0)
                return 40;
            return 50;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Configured()
        {
            return 20;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Later()
        {
            return 30;
        }
    }

    static class Inline
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Caller()
        {
            return Callee() + 100;
        }

        // No attribute: inlined into Caller.
        internal static int Callee()
        {
            return 5;
        }
    }

    // One thread of `start`: counts per result of Plain and of Caller.
    sealed class Worker
    {
        // Set by `stop`, read by every worker after each iteration.
        internal static volatile bool Stopping;
        // Workers that have made their first iteration; guarded by Gate.
        internal static int Ready;
        internal static readonly object Gate;

        internal readonly Dictionary<int, long> Plain;
        internal readonly Dictionary<int, long> Caller;
        internal long Calls;
        internal Thread Thread;

        // Written out (not field initializers) only to carry the attribute.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static Worker()
        {
            Gate = new object();
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal Worker()
        {
            Plain = new Dictionary<int, long>();
            Caller = new Dictionary<int, long>();
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal void Run()
        {
            bool first = true;
            do
            {
                Count(Plain, Values.Plain());
                Count(Caller, Inline.Caller());
                Calls += 2;
                if (first)
                {
                    first = false;
                    lock (Gate)
                    {
                        Ready++;
                        Monitor.PulseAll(Gate);
                    }
                }
            } while (!Stopping);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static void Count(Dictionary<int, long> counts, int value)
        {
            long n;
            counts.TryGetValue(value, out n);
            counts[value] = n + 1;
        }
    }

    static class Program
    {
        const int ExitCode = 29;
        const int MaxThreads = 64;

        static List<Worker> workers;
        static Func<int> emitted;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Main()
        {
            string line;
            while ((line = Console.In.ReadLine()) != null)
            {
                line = line.Trim();
                if (line == "quit")
                    break;
                Answer(line);
                Console.Out.WriteLine("done");
                Console.Out.Flush();
            }
            if (workers != null)
                StopWorkers();
            Console.Out.WriteLine("bye");
            Console.Out.Flush();
            return ExitCode;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Answer(string line)
        {
            string[] words = line.Split(new[] { ' ', '\t' }, StringSplitOptions.RemoveEmptyEntries);
            if (words.Length == 0)
                return;
            int n;
            switch (words[0])
            {
                case "round":
                    if (words.Length != 1)
                        break;
                    Round();
                    return;
                case "later":
                    if (words.Length != 1)
                        break;
                    Print("Later", Values.Later());
                    return;
                case "hot":
                    if (words.Length != 2 || !Count(words[1], int.MaxValue, out n))
                        break;
                    Hot(n);
                    return;
                case "dynamic":
                    if (words.Length != 1)
                        break;
                    Dynamic();
                    return;
                case "start":
                    if (words.Length != 2 || !Count(words[1], MaxThreads, out n) || n < 1)
                        break;
                    Start(n);
                    return;
                case "stop":
                    if (words.Length != 1)
                        break;
                    Stop();
                    return;
                case "gc":
                    if (words.Length != 1)
                        break;
                    GC.Collect();
                    GC.WaitForPendingFinalizers();
                    Console.Out.WriteLine("gc");
                    return;
                case "exit":
                    if (words.Length != 2 || !Count(words[1], 255, out n))
                        break;
                    Ending.Exit(n);
                    return;
                case "throw":
                    if (words.Length != 1)
                        break;
                    Ending.Throw();
                    return;
            }
            Console.Out.WriteLine("unknown " + line);
        }

        // A decimal count 0 .. max (digits only).
        [MethodImpl(MethodImplOptions.NoInlining)]
        static bool Count(string word, int max, out int n)
        {
            n = 0;
            foreach (char c in word)
                if (c < '0' || c > '9')
                    return false;
            return int.TryParse(word, NumberStyles.None, CultureInfo.InvariantCulture, out n)
                && n <= max;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Print(string name, long value)
        {
            Console.Out.WriteLine(name + " " + value.ToString(CultureInfo.InvariantCulture));
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Round()
        {
            Print("Plain", Values.Plain());
            Print("Branches", Values.Branches(2));
            Print("Configured", Values.Configured());
            Print("Caller", Inline.Caller());
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Hot(int n)
        {
            long sum = 0;
            for (int i = 0; i < n; i++)
                sum += Inline.Caller();
            Console.Out.WriteLine("hot " + n.ToString(CultureInfo.InvariantCulture) + " sum "
                + sum.ToString(CultureInfo.InvariantCulture));
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Dynamic()
        {
            if (emitted == null)
            {
                AssemblyBuilder assembly = AssemblyBuilder.DefineDynamicAssembly(
                    new AssemblyName("DialDynamic"), AssemblyBuilderAccess.Run);
                ModuleBuilder module = assembly.DefineDynamicModule("DialDynamic");
                TypeBuilder type = module.DefineType("Dyn.Emitted",
                    TypeAttributes.Public | TypeAttributes.Class | TypeAttributes.Abstract
                    | TypeAttributes.Sealed);
                MethodBuilder method = type.DefineMethod("Value",
                    MethodAttributes.Public | MethodAttributes.Static, typeof(int), Type.EmptyTypes);
                method.SetImplementationFlags(MethodImplAttributes.NoInlining);
                ILGenerator il = method.GetILGenerator();
                il.Emit(OpCodes.Ldc_I4_7);
                il.Emit(OpCodes.Ret);
                Type created = type.CreateType();
                emitted = (Func<int>)Delegate.CreateDelegate(typeof(Func<int>),
                    created.GetMethod("Value"));
            }
            Print("Emitted", emitted());
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Start(int count)
        {
            if (workers != null)
            {
                Console.Out.WriteLine("already started");
                return;
            }
            Worker.Stopping = false;
            lock (Worker.Gate)
                Worker.Ready = 0;
            workers = new List<Worker>();
            for (int i = 0; i < count; i++)
            {
                var worker = new Worker();
                worker.Thread = new Thread(worker.Run);
                worker.Thread.IsBackground = true;
                worker.Thread.Start();
                workers.Add(worker);
            }
            lock (Worker.Gate)
            {
                while (Worker.Ready < count)
                    Monitor.Wait(Worker.Gate);
            }
            Console.Out.WriteLine("started " + count.ToString(CultureInfo.InvariantCulture));
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Stop()
        {
            if (workers == null)
            {
                Console.Out.WriteLine("not started");
                return;
            }
            List<Worker> stopped = StopWorkers();
            var plain = new Dictionary<int, long>();
            var caller = new Dictionary<int, long>();
            long calls = 0;
            foreach (Worker worker in stopped)
            {
                Merge(plain, worker.Plain);
                Merge(caller, worker.Caller);
                calls += worker.Calls;
            }
            Console.Out.WriteLine("calls " + calls.ToString(CultureInfo.InvariantCulture));
            // Ordinal order of the names: Caller, Plain.
            PrintSeen("Caller", caller);
            PrintSeen("Plain", plain);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static List<Worker> StopWorkers()
        {
            List<Worker> stopped = workers;
            workers = null;
            Worker.Stopping = true;
            foreach (Worker worker in stopped)
                worker.Thread.Join();
            return stopped;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Merge(Dictionary<int, long> into, Dictionary<int, long> from)
        {
            foreach (KeyValuePair<int, long> pair in from)
            {
                long n;
                into.TryGetValue(pair.Key, out n);
                into[pair.Key] = n + pair.Value;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void PrintSeen(string name, Dictionary<int, long> counts)
        {
            var values = new List<int>(counts.Keys);
            values.Sort();
            foreach (int value in values)
                Console.Out.WriteLine("seen " + name + " "
                    + value.ToString(CultureInfo.InvariantCulture) + " count "
                    + counts[value].ToString(CultureInfo.InvariantCulture));
        }
    }

    // The ends that do not come through Main returning (after every other type, so the
    // tokens of the methods above stay as they were).
    static class Ending
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static void Exit(int code)
        {
            var thread = new Thread(() => Environment.Exit(code));
            thread.IsBackground = true;
            thread.Start();
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static void Throw()
        {
            var thread = new Thread(() => { throw new InvalidOperationException("Dial: thrown by request"); });
            thread.IsBackground = true;
            thread.Start();
        }
    }
}
