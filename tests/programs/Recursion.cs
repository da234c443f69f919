// Recursion.exe: how much stack a plain recursive method takes per level, and whether a
// recursion of a given depth fits in a thread's stack; for measuring what a rewrite
// (a try/finally wrap, probes at entry and exit) costs a program in recursion depth.
//
//   Recursion.exe          measures: Sum(1,000) and Sum(3,000) each record the address
//                          of a local in a frame called at the bottom, and the difference
//                          over the 2,000 extra levels is the stack one level of Sum
//                          takes. Prints the two sums on stdout and, on stderr,
//                          "recursion: N bytes per frame".
//   Recursion.exe DEPTH    runs Sum(DEPTH) on a thread with a 1 MiB stack and prints it:
//                          a depth that does not fit ends the process with a stack
//                          overflow (so a script bisects the deepest depth that fits).
//
// Sum(n) = n + Sum(n - 1) (not a tail call: the addition follows it) is n(n + 1)/2,
// checked: exit 99 if it differs. Exit code 27. Sum and Here are NoInlining.
using System;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Recursion
{
    static unsafe class Deep
    {
        /// The address of a local in the frame Sum's bottom level calls.
        static long bottom;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Here()
        {
            byte local = 0;
            return (long)&local;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Sum(int n)
        {
            if (n == 0)
            {
                bottom = Here();
                return 0;
            }
            return n + Sum(n - 1);
        }

        static bool Check(int n, long sum)
        {
            long expected = (long)n * (n + 1) / 2;
            Console.WriteLine("sum " + n + " = " + sum);
            return sum == expected;
        }

        static int Main(string[] args)
        {
            bool ok = true;
            if (args.Length == 0)
            {
                ok &= Check(1000, Sum(1000));
                long shallow = bottom;
                ok &= Check(3000, Sum(3000));
                long deep = bottom;
                Console.Error.WriteLine("recursion: " + (shallow - deep) / 2000 + " bytes per frame");
            }
            else
            {
                int depth = int.Parse(args[0]);
                long sum = 0;
                Thread thread = new Thread(() => { sum = Sum(depth); }, 1 << 20);
                thread.Start();
                thread.Join();
                ok &= Check(depth, sum);
            }
            return ok ? 27 : 99;
        }
    }
}
