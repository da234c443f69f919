// CallTree.exe: single-threaded, all its work in one type, CallTree.Work, whose call
// tree is known exactly, so that a profiler's enter/exit counters filtered to the
// methods of CallTree.Work can be compared with the count this program prints:
//
//   calls 219
//
// The count includes the one call of Work's constructor. Every call returns normally
// or is unwound by an exception caught within Work, so a profiler whose exit probe runs
// on both paths (a finally) counts as many exits as enters. Exit code 14 (99 if the two
// independent counts below disagree).
//
// The tree (see Work.Run):
//   Work(int)                                  1
//   Run()                                      1
//   Fib(10)                                  177  calls(n) = 1 for n < 2, else
//                                                 1 + calls(n-1) + calls(n-2);
//                                                 = 2 * fib(11) - 1 = 2 * 89 - 1
//   Chain(5)                                   6  Chain(5) .. Chain(0)
//   Catcher(k), k = 0..4                      28  per k: Catcher 1, Thrower k + 1
//                                                 (Thrower(k, k) .. Thrower(0, k),
//                                                 which throws; the others catch and
//                                                 rethrow), IsMine 1 (the filter),
//                                                 Recover 1 if k is even (the filter
//                                                 accepts even depths; odd ones escape
//                                                 to Run's catch): 5 + 15 + 5 + 3
//   Guarded(3)                                 6  Guarded 1, Chain(3) 4, Cleanup 1
//                                            ---
//                                            219
//
// Program computes that sum from the formulas (ExpectedCalls) and, separately, Work
// counts its own calls in Tally.Calls, a static field outside Work. Every method of
// Work is marked NoInlining so that the count is the same whether or not the JIT (or a
// profiler) allows inlining. Work has no static fields (hence no class constructor),
// no lambdas, iterators or async methods (whose code the compiler would put in other,
// generated types or methods).
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug-
using System;
using System.Runtime.CompilerServices;

namespace CallTree
{
    // Outside Work on purpose: its calls are not part of the count.
    static class Tally
    {
        public static long Calls;
        public static void Hit() { Calls++; }
    }

    sealed class WorkException : Exception
    {
        public readonly int K;
        public WorkException(int k) : base("k " + k) { K = k; }
    }

    sealed class Work
    {
        readonly int scale;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public Work(int scale)
        {
            Tally.Hit();
            this.scale = scale;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public int Run()
        {
            Tally.Hit();
            int total = Fib(10);
            total += Chain(5);
            for (int k = 0; k < 5; k++)
            {
                try
                {
                    total += Catcher(k);
                }
                catch (WorkException e)
                {
                    total -= e.K;
                }
            }
            total += Guarded(3);
            return total;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Fib(int n)
        {
            Tally.Hit();
            return n < 2 ? n : Fib(n - 1) + Fib(n - 2);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Chain(int n)
        {
            Tally.Hit();
            return n == 0 ? 0 : n + Chain(n - 1);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        int Catcher(int depth)
        {
            Tally.Hit();
            try
            {
                return Thrower(depth, depth);
            }
            catch (WorkException e) when (IsMine(e))
            {
                return Recover(e.K);
            }
        }

        // Thrower(depth, k) .. Thrower(0, k), which throws; every level above catches
        // and rethrows.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Thrower(int depth, int k)
        {
            Tally.Hit();
            if (depth == 0)
                throw new WorkException(k);
            try
            {
                return Thrower(depth - 1, k) + 1;
            }
            catch (WorkException)
            {
                throw;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        bool IsMine(WorkException e)
        {
            Tally.Hit();
            return e.K % 2 == 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        int Recover(int depth)
        {
            Tally.Hit();
            return depth * scale + 1000;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        int Guarded(int n)
        {
            Tally.Hit();
            try
            {
                return Chain(n) * scale;
            }
            finally
            {
                Cleanup();
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Cleanup()
        {
            Tally.Hit();
        }
    }

    static class Program
    {
        static long FibCalls(int n)
        {
            return n < 2 ? 1 : 1 + FibCalls(n - 1) + FibCalls(n - 2);
        }

        // The count of calls of Work's methods made by `new Work(..).Run()`, from the
        // formulas in the header comment.
        static long ExpectedCalls()
        {
            long calls = 1 + 1;              // constructor, Run
            calls += FibCalls(10);           // Fib(10)
            calls += 5 + 1;                  // Chain(5)
            for (int k = 0; k < 5; k++)      // Catcher(k)
                calls += 1 + (k + 1) + 1 + (k % 2 == 0 ? 1 : 0);
            calls += 1 + (3 + 1) + 1;        // Guarded(3)
            return calls;
        }

        static int Main()
        {
            var work = new Work(3);
            int result = work.Run();
            long expected = ExpectedCalls();
            Console.WriteLine("result " + result);
            Console.WriteLine("calls " + Tally.Calls);
            if (Tally.Calls != expected)
            {
                Console.WriteLine("mismatch: the formula says " + expected);
                return 99;
            }
            return 14;
        }
    }
}
