// EltBench.exe: the per-call cost of the enter/leave hooks, measured inside the program.
//
//   EltBench.exe [CALLS]     (20,000,000 by default)
//
// Calls EltBench.Target::Work(int, long, double) (NoInlining; returns a long computed
// from all three) CALLS times in a loop, after a warm-up of CALLS / 10 calls, and
// prints `checksum N` (the sum of the results, so the calls cannot be dropped) to
// stdout and `ns-per-call X` (the loop's Stopwatch time divided by CALLS, 3 decimals)
// to stderr. The loop is in
// EltBench.Program, so that a profiler can hook Target's function alone. Exit code 47.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug-
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace EltBench
{
    static class Target
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Work(int a, long b, double c) { return a + b + (long)c; }
    }

    static class Program
    {
        static long Loop(int calls)
        {
            long sum = 0;
            for (int i = 0; i < calls; i++) sum += Target.Work(i, 3, 0.5);
            return sum;
        }

        static int Main(string[] args)
        {
            int calls = args.Length > 0 ? int.Parse(args[0]) : 20000000;
            long sum = Loop(calls / 10);
            var watch = Stopwatch.StartNew();
            sum += Loop(calls);
            watch.Stop();
            double ns = watch.Elapsed.TotalMilliseconds * 1e6 / calls;
            Console.Error.WriteLine("ns-per-call " + ns.ToString("F3", System.Globalization.CultureInfo.InvariantCulture));
            Console.WriteLine("checksum " + sum);
            return 47;
        }
    }
}
