// Inlining.exe: 32 small methods that the JIT inlines (they are NOT NoInlining: the
// point is that the JIT is free to inline them into their callers), called from five
// driver methods (NoInlining) in loops of known length: method k (k = 0..31) is called
// exactly n(k) = (k + 1) * 1,000 times, with the loop index i = 0 .. n(k) - 1, and
// every call returns a(k) * i + b(k), so the sum of its results is
//   a(k) * n(k) * (n(k) - 1) / 2 + b(k) * n(k).
// Exit code 26 (99 if a sum differs from that formula).
//
// Unprofiled, CoreCLR 3.1.23 inlines all 32 (and Box's constructor) with tiered
// compilation on or off: with COMPlus_PerfMapEnabled=1, /tmp/perf-<pid>.map lists
// only Main, the five drivers and Expected of the namespace (the drivers and Main have
// loops, so they are compiled optimized at once, without tier 0). The 3.1 JIT rejects
// an inlinee of more than 5 basic blocks, so Select and Clamp are written as ifs with
// early returns: a switch, or the nested `?:` (whose arms branch to one shared `ret`),
// makes 6 or more and they were compiled on their own.
//
// The methods (a, b) and how their driver calls them:
//   k  method                                    call                     a   b
//   RunStatic: tiny static methods returning an expression
//   0  Inlining.Ops::Inc(x)        x + 1          Inc(i)                   1   1
//   1  Inlining.Ops::Double(x)     x * 2          Double(i)                2   0
//   2  Inlining.Ops::Triple(x)     x + x + x      Triple(i)                3   0
//   3  Inlining.Ops::Widen(x)      (long)x + 3    Widen(i)                 1   3
//   4  Inlining.Ops::Negate(x)     -x             Negate(i)               -1   0
//   5  Inlining.Ops::Less7(x)      x - 7          Less7(i)                 1  -7
//   6  Inlining.Ops::Quad(x)       x << 2         Quad(i)                  4   0
//   7  Inlining.Ops::Mean(x, y)    (x + y) / 2    Mean(i, i + 2)           1   1
//   8  Inlining.Ops::Max(x, y)     x > y ? x : y  Max(i, -1)               1   0
//   9  Inlining.Ops::Abs(x)        x < 0 ? -x : x Abs(-i)                  1   0
//  10  Inlining.Ops::Mul(x, y)     x * y (long)   Mul(i, six), six = 6     6   0
//  11  Inlining.Ops::Five(x)       x * 5 - 2      Five(i)                  5  -2
//   RunGetters: instance property getters of a sealed class (box.V = i, Base = 10)
//  12  Inlining.Box::get_Value     V              box.Value                1   0
//  13  Inlining.Box::get_Next      V + 1          box.Next                 1   1
//  14  Inlining.Box::get_Twice     V * 2          box.Twice                2   0
//  15  Inlining.Box::get_Wide      (long)V * 3    box.Wide                 3   0
//  16  Inlining.Box::get_Offset    V + Base       box.Offset               1  10
//  17  Inlining.Box::get_Negative  -V             box.Negative            -1   0
//  18  Inlining.Box::get_Half      V * 4 / 2      box.Half                 2   0
//  19  Inlining.Box::get_Both      V + V + Base   box.Both                 2  10
//   RunGeneric: small generic methods over value types (unshared code)
//  20  Inlining.Gen::Id<T>(x)      x              Id<int>(i)               1   0
//  21  Inlining.Gen::First<T>(x,y) x              First<long>(i, -5)       1   0
//  22  Inlining.Gen::Pick<T>(f,x,y) f ? x : y     Pick<int>(false, -1, i)  1   0
//  23  Inlining.Gen::Count<T>(a,y) a.Length + y   Count<byte>(three, i)    1   3
//   RunStruct: small instance methods of a struct (pair.A = i, pair.B = 2)
//  24  Inlining.Pair::Sum()        A + B          pair.Sum()               1   2
//  25  Inlining.Pair::Diff()       A - B          pair.Diff()              1  -2
//  26  Inlining.Pair::Product()    (long)A * B    pair.Product()           2   0
//  27  Inlining.Pair::Scaled(f)    A * f + B      pair.Scaled(3)           3   2
//   RunConstant: an argument that is a constant at the call site
//  28  Inlining.Ops::Scale(x, f)   f == 0 ? x : x * f          Scale(i, 5)         5   0
//  29  Inlining.Ops::Select(x, m)  m == 0 ? x : m == 1 ? x + 1 : x * m (as ifs)
//                                                 Select(i, 2)             2   0
//  30  Inlining.Ops::Clamp(x,lo,hi) x < lo ? lo : x > hi ? hi : x (as ifs)
//                                                 Clamp(i, 0, MaxValue)    1   0
//  31  Inlining.Ops::Shift(x, s)   s >= 0 ? x << s : x >> -s   Shift(i, 3)         8   0
//
// The calls of the methods of namespace Inlining (what a profiler's enter and exit
// counters filtered to `Inlining.` must show, inlined or not; every method that runs):
//   the 32 methods above          sum of (k + 1) * 1,000, k = 0..31 = 528 * 1,000  528,000
//   Inlining.Program::RunStatic, RunGetters, RunGeneric, RunStruct, RunConstant  5 x 1
//   Inlining.Box::.ctor                                                           1
//   Inlining.Program::Expected                                                    1
//   Inlining.Program::Main                                                        1
//   all methods of Inlining.*                                               528,008
// No other method of the namespace runs: no class constructor (no static field has an
// initializer), no lambda, iterator or async method; Pair is never constructed (its
// fields are assigned). The program cannot count the calls of the small methods itself
// (a counter would make them bigger); it prints the count from the formula and checks
// every method's sum, which depends on every call, against the formula above (computed
// in Expected without calling them).
//
// Output: one line per method (k, name, calls, sum), then the checksum (the sum of the
// 32 sums) and `calls 528008`.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug-
using System;
using System.Runtime.CompilerServices;

namespace Inlining
{
    static class Ops
    {
        public static int Inc(int x) { return x + 1; }
        public static int Double(int x) { return x * 2; }
        public static int Triple(int x) { return x + x + x; }
        public static long Widen(int x) { return (long)x + 3; }
        public static int Negate(int x) { return -x; }
        public static int Less7(int x) { return x - 7; }
        public static int Quad(int x) { return x << 2; }
        public static int Mean(int x, int y) { return (x + y) / 2; }
        public static int Max(int x, int y) { return x > y ? x : y; }
        public static int Abs(int x) { return x < 0 ? -x : x; }
        public static long Mul(long x, long y) { return x * y; }
        public static int Five(int x) { return x * 5 - 2; }

        // Called with a constant argument, which the JIT can fold after inlining.
        public static int Scale(int x, int f)
        {
            if (f == 0)
                return x;
            return x * f;
        }

        public static int Select(int x, int mode)
        {
            if (mode == 0)
                return x;
            if (mode == 1)
                return x + 1;
            return x * mode;
        }

        public static int Clamp(int x, int lo, int hi)
        {
            if (x < lo)
                return lo;
            if (x > hi)
                return hi;
            return x;
        }

        public static long Shift(long x, int s)
        {
            return s >= 0 ? x << s : x >> -s;
        }
    }

    sealed class Box
    {
        public int V;
        readonly int Base;

        public Box(int b) { Base = b; }

        public int Value { get { return V; } }
        public int Next { get { return V + 1; } }
        public int Twice { get { return V * 2; } }
        public long Wide { get { return (long)V * 3; } }
        public int Offset { get { return V + Base; } }
        public int Negative { get { return -V; } }
        public int Half { get { return V * 4 / 2; } }
        public int Both { get { return V + V + Base; } }
    }

    static class Gen
    {
        public static T Id<T>(T x) { return x; }
        public static T First<T>(T x, T y) { return x; }
        public static T Pick<T>(bool first, T x, T y) { return first ? x : y; }
        public static int Count<T>(T[] items, int y) { return items.Length + y; }
    }

    struct Pair
    {
        public int A, B;

        public int Sum() { return A + B; }
        public int Diff() { return A - B; }
        public long Product() { return (long)A * B; }
        public int Scaled(int f) { return A * f + B; }
    }

    static class Program
    {
        public const int Methods = 32;

        // Sums[k]: the sum of method k's results.
        static long[] Sums;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void RunStatic()
        {
            long s;
            s = 0; for (int i = 0; i < 1000; i++) s += Ops.Inc(i); Sums[0] = s;
            s = 0; for (int i = 0; i < 2000; i++) s += Ops.Double(i); Sums[1] = s;
            s = 0; for (int i = 0; i < 3000; i++) s += Ops.Triple(i); Sums[2] = s;
            s = 0; for (int i = 0; i < 4000; i++) s += Ops.Widen(i); Sums[3] = s;
            s = 0; for (int i = 0; i < 5000; i++) s += Ops.Negate(i); Sums[4] = s;
            s = 0; for (int i = 0; i < 6000; i++) s += Ops.Less7(i); Sums[5] = s;
            s = 0; for (int i = 0; i < 7000; i++) s += Ops.Quad(i); Sums[6] = s;
            s = 0; for (int i = 0; i < 8000; i++) s += Ops.Mean(i, i + 2); Sums[7] = s;
            s = 0; for (int i = 0; i < 9000; i++) s += Ops.Max(i, -1); Sums[8] = s;
            s = 0; for (int i = 0; i < 10000; i++) s += Ops.Abs(-i); Sums[9] = s;
            long six = 6;
            s = 0; for (int i = 0; i < 11000; i++) s += Ops.Mul(i, six); Sums[10] = s;
            s = 0; for (int i = 0; i < 12000; i++) s += Ops.Five(i); Sums[11] = s;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void RunGetters()
        {
            var box = new Box(10);
            long s;
            s = 0; for (int i = 0; i < 13000; i++) { box.V = i; s += box.Value; } Sums[12] = s;
            s = 0; for (int i = 0; i < 14000; i++) { box.V = i; s += box.Next; } Sums[13] = s;
            s = 0; for (int i = 0; i < 15000; i++) { box.V = i; s += box.Twice; } Sums[14] = s;
            s = 0; for (int i = 0; i < 16000; i++) { box.V = i; s += box.Wide; } Sums[15] = s;
            s = 0; for (int i = 0; i < 17000; i++) { box.V = i; s += box.Offset; } Sums[16] = s;
            s = 0; for (int i = 0; i < 18000; i++) { box.V = i; s += box.Negative; } Sums[17] = s;
            s = 0; for (int i = 0; i < 19000; i++) { box.V = i; s += box.Half; } Sums[18] = s;
            s = 0; for (int i = 0; i < 20000; i++) { box.V = i; s += box.Both; } Sums[19] = s;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void RunGeneric()
        {
            var three = new byte[3];
            long s;
            s = 0; for (int i = 0; i < 21000; i++) s += Gen.Id<int>(i); Sums[20] = s;
            s = 0; for (int i = 0; i < 22000; i++) s += Gen.First<long>(i, -5); Sums[21] = s;
            s = 0; for (int i = 0; i < 23000; i++) s += Gen.Pick<int>(false, -1, i); Sums[22] = s;
            s = 0; for (int i = 0; i < 24000; i++) s += Gen.Count<byte>(three, i); Sums[23] = s;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void RunStruct()
        {
            Pair pair;
            pair.A = 0;
            pair.B = 2;
            long s;
            s = 0; for (int i = 0; i < 25000; i++) { pair.A = i; s += pair.Sum(); } Sums[24] = s;
            s = 0; for (int i = 0; i < 26000; i++) { pair.A = i; s += pair.Diff(); } Sums[25] = s;
            s = 0; for (int i = 0; i < 27000; i++) { pair.A = i; s += pair.Product(); } Sums[26] = s;
            s = 0; for (int i = 0; i < 28000; i++) { pair.A = i; s += pair.Scaled(3); } Sums[27] = s;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void RunConstant()
        {
            long s;
            s = 0; for (int i = 0; i < 29000; i++) s += Ops.Scale(i, 5); Sums[28] = s;
            s = 0; for (int i = 0; i < 30000; i++) s += Ops.Select(i, 2); Sums[29] = s;
            s = 0; for (int i = 0; i < 31000; i++) s += Ops.Clamp(i, 0, int.MaxValue); Sums[30] = s;
            s = 0; for (int i = 0; i < 32000; i++) s += Ops.Shift(i, 3); Sums[31] = s;
        }

        // Method k's sum from the header's formula, without calling it.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static long[] Expected()
        {
            var sums = new long[Methods];
            for (int k = 0; k < Methods; k++)
            {
                long a, b;
                switch (k)
                {
                    case 0: a = 1; b = 1; break;
                    case 1: a = 2; b = 0; break;
                    case 2: a = 3; b = 0; break;
                    case 3: a = 1; b = 3; break;
                    case 4: a = -1; b = 0; break;
                    case 5: a = 1; b = -7; break;
                    case 6: a = 4; b = 0; break;
                    case 7: a = 1; b = 1; break;
                    case 8: a = 1; b = 0; break;
                    case 9: a = 1; b = 0; break;
                    case 10: a = 6; b = 0; break;
                    case 11: a = 5; b = -2; break;
                    case 12: a = 1; b = 0; break;
                    case 13: a = 1; b = 1; break;
                    case 14: a = 2; b = 0; break;
                    case 15: a = 3; b = 0; break;
                    case 16: a = 1; b = 10; break;
                    case 17: a = -1; b = 0; break;
                    case 18: a = 2; b = 0; break;
                    case 19: a = 2; b = 10; break;
                    case 20: a = 1; b = 0; break;
                    case 21: a = 1; b = 0; break;
                    case 22: a = 1; b = 0; break;
                    case 23: a = 1; b = 3; break;
                    case 24: a = 1; b = 2; break;
                    case 25: a = 1; b = -2; break;
                    case 26: a = 2; b = 0; break;
                    case 27: a = 3; b = 2; break;
                    case 28: a = 5; b = 0; break;
                    case 29: a = 2; b = 0; break;
                    case 30: a = 1; b = 0; break;
                    default: a = 8; b = 0; break;
                }
                long n = (k + 1) * 1000L;
                sums[k] = a * (n * (n - 1) / 2) + b * n;
            }
            return sums;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Main()
        {
            string[] names = {
                "Ops::Inc", "Ops::Double", "Ops::Triple", "Ops::Widen", "Ops::Negate",
                "Ops::Less7", "Ops::Quad", "Ops::Mean", "Ops::Max", "Ops::Abs", "Ops::Mul",
                "Ops::Five", "Box::get_Value", "Box::get_Next", "Box::get_Twice",
                "Box::get_Wide", "Box::get_Offset", "Box::get_Negative", "Box::get_Half",
                "Box::get_Both", "Gen::Id<int>", "Gen::First<long>", "Gen::Pick<int>",
                "Gen::Count<byte>", "Pair::Sum", "Pair::Diff", "Pair::Product", "Pair::Scaled",
                "Ops::Scale", "Ops::Select", "Ops::Clamp", "Ops::Shift",
            };
            Sums = new long[Methods];
            RunStatic();
            RunGetters();
            RunGeneric();
            RunStruct();
            RunConstant();
            long[] expected = Expected();

            bool ok = names.Length == Methods;
            long checksum = 0, expectedChecksum = 0, calls = 0;
            for (int k = 0; k < Methods; k++)
            {
                long n = (k + 1) * 1000L;
                Console.WriteLine(k + " Inlining." + names[k] + " calls " + n + " sum " + Sums[k]);
                if (Sums[k] != expected[k])
                {
                    Console.WriteLine("mismatch: the formula says " + expected[k]);
                    ok = false;
                }
                checksum += Sums[k];
                expectedChecksum += expected[k];
                calls += n;
            }
            // The drivers, Box::.ctor, Expected and Main.
            calls += 5 + 1 + 1 + 1;
            Console.WriteLine("checksum " + checksum);
            Console.WriteLine("calls " + calls);
            if (!ok || checksum != expectedChecksum || calls != 528008)
                return 99;
            return 26;
        }
    }
}
