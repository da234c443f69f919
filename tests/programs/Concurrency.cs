// Concurrency.exe: 32 threads, released at once by a Barrier, make the first calls of
// thousands of instantiations of generic methods and of methods of generic classes at
// the same moment, so that the runtime JIT-compiles different instantiations of the
// same method definition on several threads at once (and a profiler sees
// JITCompilationStarted for one MethodDef on several threads at once). Exit code 18
// (99 if the program's own counts or results differ from the formulas below).
//
// The types: 128 type arguments, 100 value types S00..S99 (four layouts: an int; two
// longs; an object reference and an int; a double and two ints) and 28 reference types
// R00..R27 (never instantiated). The methods called with each of them (m = 0..19):
//   m = 0..9     Gen.G<m><T>(T, int)       generic methods of a non-generic class
//   m = 10..19   C<m-10><T>.M(T, int)      static methods of generic classes
// and Driver<T>.Run(int m), an instance method of a generic class that calls method m
// with T (Main makes one Driver<T> per type, Drivers[id] for type id, before the
// threads start). Over a value type each of these is compiled separately (unshared
// code); over all 28 reference types once (shared, canonical code, which looks T up at
// run time: the methods allocate a T[]).
//
// Each thread t = 0..31, for m = 0..19 in that order, waits at the barrier (so all
// threads start on method m at once, each with a first call that compiles a different
// instantiation of it), then calls Drivers[id].Run(m) for every id = 0..127 once, in its
// own order id = (j * (2t + 1) + 5t) mod 128, j = 0..127 (2t + 1 is odd, so that is a
// permutation of the 128 types; the 32 threads start at 32 different types). So every
// thread calls every (method, type) pair exactly once, and the first calls of method m
// with 32 different types are made at the same moment. Results and counts are printed
// by Main after it joined the threads, in a fixed order.
//
// The calls of the methods of namespace Concurrency (what a profiler's enter and exit
// counters filtered to `Concurrency.` must show; every method that runs is listed):
//   Concurrency.Gen::G0 .. G9            10 x 4,096   40,960   each: 32 threads x 128 types
//   Concurrency.C0`1::M .. C9`1::M       10 x 4,096   40,960
//   Concurrency.Driver`1::Run                          81,920   32 threads x 128 types x 20
//   Concurrency.Driver`1::.ctor                           128   one per type
//   Concurrency.Driver::.ctor                             128   its base constructor
//   Concurrency.Program::Work                              32   one per thread
//   Concurrency.Program::Main                               1
//   all methods of Concurrency.*                      164,129
// No other method of the namespace runs: no class constructor (no static field has an
// initializer), no lambda, iterator or async method, no constructor of S.. or R... Every
// method is NoInlining, so the counts do not depend on inlining.
//
// The JIT compilations of those methods with tiered compilation off: 101 for each of
// the 20 methods, Driver`1::Run and Driver`1::.ctor (100 value types + 1 shared), 1 each
// for Driver::.ctor, Work and Main: 2,225. With tiering on, some may be compiled again
// at tier 1 (every instantiation is called at least 32 times), at times that vary from
// run to run.
//
// Every (method, type) pair counts its own calls (Tally.Calls, Interlocked.Increment)
// and must have been called 32 times (Driver<T>.Run: 640 times); method m with type id
// returns (m + 1) * (id + 1), so every thread's sum is 8,256 * (1 + 2 + ... + 20) =
// 1,733,760. Main checks the counts, the sums and the total above against the
// formulas, and exits with 99 if any differs.
//
// Output: one line per method with its calls, one line per thread with its sum, then
// `calls 164129`.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug-
using System;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Concurrency
{
    // The 100 value types: instantiations over them are compiled one by one.
    public struct S00 { public int A; } public struct S01 { public long A, B; }
    public struct S02 { public object A; public int B; } public struct S03 { public double A; public int B, C; }
    public struct S04 { public int A; } public struct S05 { public long A, B; }
    public struct S06 { public object A; public int B; } public struct S07 { public double A; public int B, C; }
    public struct S08 { public int A; } public struct S09 { public long A, B; }
    public struct S10 { public object A; public int B; } public struct S11 { public double A; public int B, C; }
    public struct S12 { public int A; } public struct S13 { public long A, B; }
    public struct S14 { public object A; public int B; } public struct S15 { public double A; public int B, C; }
    public struct S16 { public int A; } public struct S17 { public long A, B; }
    public struct S18 { public object A; public int B; } public struct S19 { public double A; public int B, C; }
    public struct S20 { public int A; } public struct S21 { public long A, B; }
    public struct S22 { public object A; public int B; } public struct S23 { public double A; public int B, C; }
    public struct S24 { public int A; } public struct S25 { public long A, B; }
    public struct S26 { public object A; public int B; } public struct S27 { public double A; public int B, C; }
    public struct S28 { public int A; } public struct S29 { public long A, B; }
    public struct S30 { public object A; public int B; } public struct S31 { public double A; public int B, C; }
    public struct S32 { public int A; } public struct S33 { public long A, B; }
    public struct S34 { public object A; public int B; } public struct S35 { public double A; public int B, C; }
    public struct S36 { public int A; } public struct S37 { public long A, B; }
    public struct S38 { public object A; public int B; } public struct S39 { public double A; public int B, C; }
    public struct S40 { public int A; } public struct S41 { public long A, B; }
    public struct S42 { public object A; public int B; } public struct S43 { public double A; public int B, C; }
    public struct S44 { public int A; } public struct S45 { public long A, B; }
    public struct S46 { public object A; public int B; } public struct S47 { public double A; public int B, C; }
    public struct S48 { public int A; } public struct S49 { public long A, B; }
    public struct S50 { public object A; public int B; } public struct S51 { public double A; public int B, C; }
    public struct S52 { public int A; } public struct S53 { public long A, B; }
    public struct S54 { public object A; public int B; } public struct S55 { public double A; public int B, C; }
    public struct S56 { public int A; } public struct S57 { public long A, B; }
    public struct S58 { public object A; public int B; } public struct S59 { public double A; public int B, C; }
    public struct S60 { public int A; } public struct S61 { public long A, B; }
    public struct S62 { public object A; public int B; } public struct S63 { public double A; public int B, C; }
    public struct S64 { public int A; } public struct S65 { public long A, B; }
    public struct S66 { public object A; public int B; } public struct S67 { public double A; public int B, C; }
    public struct S68 { public int A; } public struct S69 { public long A, B; }
    public struct S70 { public object A; public int B; } public struct S71 { public double A; public int B, C; }
    public struct S72 { public int A; } public struct S73 { public long A, B; }
    public struct S74 { public object A; public int B; } public struct S75 { public double A; public int B, C; }
    public struct S76 { public int A; } public struct S77 { public long A, B; }
    public struct S78 { public object A; public int B; } public struct S79 { public double A; public int B, C; }
    public struct S80 { public int A; } public struct S81 { public long A, B; }
    public struct S82 { public object A; public int B; } public struct S83 { public double A; public int B, C; }
    public struct S84 { public int A; } public struct S85 { public long A, B; }
    public struct S86 { public object A; public int B; } public struct S87 { public double A; public int B, C; }
    public struct S88 { public int A; } public struct S89 { public long A, B; }
    public struct S90 { public object A; public int B; } public struct S91 { public double A; public int B, C; }
    public struct S92 { public int A; } public struct S93 { public long A, B; }
    public struct S94 { public object A; public int B; } public struct S95 { public double A; public int B, C; }
    public struct S96 { public int A; } public struct S97 { public long A, B; }
    public struct S98 { public object A; public int B; } public struct S99 { public double A; public int B, C; }
    // The 28 reference types: instantiations over them share one compilation.
    public sealed class R00 { } public sealed class R01 { } public sealed class R02 { }
    public sealed class R03 { } public sealed class R04 { } public sealed class R05 { }
    public sealed class R06 { } public sealed class R07 { } public sealed class R08 { }
    public sealed class R09 { } public sealed class R10 { } public sealed class R11 { }
    public sealed class R12 { } public sealed class R13 { } public sealed class R14 { }
    public sealed class R15 { } public sealed class R16 { } public sealed class R17 { }
    public sealed class R18 { } public sealed class R19 { } public sealed class R20 { }
    public sealed class R21 { } public sealed class R22 { } public sealed class R23 { }
    public sealed class R24 { } public sealed class R25 { } public sealed class R26 { }
    public sealed class R27 { }
    // The program's own counts; static fields without initializers (no class constructor).
    public static class Tally
    {
        // Calls[m * Program.Types + id]: calls of method m (0..19; 20 for Driver<T>.Run)
        // with type id.
        public static long[] Calls;
        public static long Main, Work, Constructors, BaseConstructors;
    }

    public static class Gen
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long G0<T>(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[0 * Program.Types + id]);
            T[] a = new T[1];
            a[0] = x;
            return a.Length * (id + 1L);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long G1<T>(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[1 * Program.Types + id]);
            T[] a = new T[2];
            a[1] = x;
            return a.Length * (id + 1L);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long G2<T>(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[2 * Program.Types + id]);
            T[] a = new T[3];
            a[2] = x;
            return a.Length * (id + 1L);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long G3<T>(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[3 * Program.Types + id]);
            T[] a = new T[4];
            a[3] = x;
            return a.Length * (id + 1L);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long G4<T>(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[4 * Program.Types + id]);
            T[] a = new T[5];
            a[4] = x;
            return a.Length * (id + 1L);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long G5<T>(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[5 * Program.Types + id]);
            T[] a = new T[6];
            a[5] = x;
            return a.Length * (id + 1L);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long G6<T>(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[6 * Program.Types + id]);
            T[] a = new T[7];
            a[6] = x;
            return a.Length * (id + 1L);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long G7<T>(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[7 * Program.Types + id]);
            T[] a = new T[8];
            a[7] = x;
            return a.Length * (id + 1L);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long G8<T>(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[8 * Program.Types + id]);
            T[] a = new T[9];
            a[8] = x;
            return a.Length * (id + 1L);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long G9<T>(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[9 * Program.Types + id]);
            T[] a = new T[10];
            a[9] = x;
            return a.Length * (id + 1L);
        }
    }

    public static class C0<T>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long M(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[10 * Program.Types + id]);
            T[] a = new T[11];
            a[10] = x;
            return a.Length * (id + 1L);
        }
    }

    public static class C1<T>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long M(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[11 * Program.Types + id]);
            T[] a = new T[12];
            a[11] = x;
            return a.Length * (id + 1L);
        }
    }

    public static class C2<T>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long M(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[12 * Program.Types + id]);
            T[] a = new T[13];
            a[12] = x;
            return a.Length * (id + 1L);
        }
    }

    public static class C3<T>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long M(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[13 * Program.Types + id]);
            T[] a = new T[14];
            a[13] = x;
            return a.Length * (id + 1L);
        }
    }

    public static class C4<T>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long M(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[14 * Program.Types + id]);
            T[] a = new T[15];
            a[14] = x;
            return a.Length * (id + 1L);
        }
    }

    public static class C5<T>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long M(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[15 * Program.Types + id]);
            T[] a = new T[16];
            a[15] = x;
            return a.Length * (id + 1L);
        }
    }

    public static class C6<T>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long M(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[16 * Program.Types + id]);
            T[] a = new T[17];
            a[16] = x;
            return a.Length * (id + 1L);
        }
    }

    public static class C7<T>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long M(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[17 * Program.Types + id]);
            T[] a = new T[18];
            a[17] = x;
            return a.Length * (id + 1L);
        }
    }

    public static class C8<T>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long M(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[18 * Program.Types + id]);
            T[] a = new T[19];
            a[18] = x;
            return a.Length * (id + 1L);
        }
    }

    public static class C9<T>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long M(T x, int id)
        {
            Interlocked.Increment(ref Tally.Calls[19 * Program.Types + id]);
            T[] a = new T[20];
            a[19] = x;
            return a.Length * (id + 1L);
        }
    }
    public abstract class Driver
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        protected Driver()
        {
            Interlocked.Increment(ref Tally.BaseConstructors);
        }

        public abstract long Run(int m);
    }

    public sealed class Driver<T> : Driver
    {
        readonly int id;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public Driver(int id)
        {
            Interlocked.Increment(ref Tally.Constructors);
            this.id = id;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public override long Run(int m)
        {
            Interlocked.Increment(ref Tally.Calls[Program.Methods * Program.Types + id]);
            switch (m)
            {
                case 0: return Gen.G0(default(T), id);
                case 1: return Gen.G1(default(T), id);
                case 2: return Gen.G2(default(T), id);
                case 3: return Gen.G3(default(T), id);
                case 4: return Gen.G4(default(T), id);
                case 5: return Gen.G5(default(T), id);
                case 6: return Gen.G6(default(T), id);
                case 7: return Gen.G7(default(T), id);
                case 8: return Gen.G8(default(T), id);
                case 9: return Gen.G9(default(T), id);
                case 10: return C0<T>.M(default(T), id);
                case 11: return C1<T>.M(default(T), id);
                case 12: return C2<T>.M(default(T), id);
                case 13: return C3<T>.M(default(T), id);
                case 14: return C4<T>.M(default(T), id);
                case 15: return C5<T>.M(default(T), id);
                case 16: return C6<T>.M(default(T), id);
                case 17: return C7<T>.M(default(T), id);
                case 18: return C8<T>.M(default(T), id);
                case 19: return C9<T>.M(default(T), id);
                default: throw new ArgumentOutOfRangeException("m");
            }
        }
    }

    public static class Program
    {
        public const int Threads = 32;
        public const int ValueTypes = 100;
        public const int ReferenceTypes = 28;
        public const int Types = ValueTypes + ReferenceTypes;
        // Gen.G0..G9 and C0..C9<T>.M; Driver<T>.Run is method number Methods.
        public const int Methods = 20;

        static Driver[] Drivers;
        static Barrier Start;
        static long[] Sums;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Work(object state)
        {
            Interlocked.Increment(ref Tally.Work);
            int t = (int)state;
            int stride = 2 * t + 1;
            int offset = 5 * t;
            long sum = 0;
            for (int m = 0; m < Methods; m++)
            {
                // All threads start on method m together.
                Start.SignalAndWait();
                for (int j = 0; j < Types; j++)
                    sum += Drivers[(j * stride + offset) % Types].Run(m);
            }
            Sums[t] = sum;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Main()
        {
            Interlocked.Increment(ref Tally.Main);
            Tally.Calls = new long[(Methods + 1) * Types];
            Drivers = new Driver[] {
                new Driver<S00>(0), new Driver<S01>(1), new Driver<S02>(2), new Driver<S03>(3),
                new Driver<S04>(4), new Driver<S05>(5), new Driver<S06>(6), new Driver<S07>(7),
                new Driver<S08>(8), new Driver<S09>(9), new Driver<S10>(10), new Driver<S11>(11),
                new Driver<S12>(12), new Driver<S13>(13), new Driver<S14>(14), new Driver<S15>(15),
                new Driver<S16>(16), new Driver<S17>(17), new Driver<S18>(18), new Driver<S19>(19),
                new Driver<S20>(20), new Driver<S21>(21), new Driver<S22>(22), new Driver<S23>(23),
                new Driver<S24>(24), new Driver<S25>(25), new Driver<S26>(26), new Driver<S27>(27),
                new Driver<S28>(28), new Driver<S29>(29), new Driver<S30>(30), new Driver<S31>(31),
                new Driver<S32>(32), new Driver<S33>(33), new Driver<S34>(34), new Driver<S35>(35),
                new Driver<S36>(36), new Driver<S37>(37), new Driver<S38>(38), new Driver<S39>(39),
                new Driver<S40>(40), new Driver<S41>(41), new Driver<S42>(42), new Driver<S43>(43),
                new Driver<S44>(44), new Driver<S45>(45), new Driver<S46>(46), new Driver<S47>(47),
                new Driver<S48>(48), new Driver<S49>(49), new Driver<S50>(50), new Driver<S51>(51),
                new Driver<S52>(52), new Driver<S53>(53), new Driver<S54>(54), new Driver<S55>(55),
                new Driver<S56>(56), new Driver<S57>(57), new Driver<S58>(58), new Driver<S59>(59),
                new Driver<S60>(60), new Driver<S61>(61), new Driver<S62>(62), new Driver<S63>(63),
                new Driver<S64>(64), new Driver<S65>(65), new Driver<S66>(66), new Driver<S67>(67),
                new Driver<S68>(68), new Driver<S69>(69), new Driver<S70>(70), new Driver<S71>(71),
                new Driver<S72>(72), new Driver<S73>(73), new Driver<S74>(74), new Driver<S75>(75),
                new Driver<S76>(76), new Driver<S77>(77), new Driver<S78>(78), new Driver<S79>(79),
                new Driver<S80>(80), new Driver<S81>(81), new Driver<S82>(82), new Driver<S83>(83),
                new Driver<S84>(84), new Driver<S85>(85), new Driver<S86>(86), new Driver<S87>(87),
                new Driver<S88>(88), new Driver<S89>(89), new Driver<S90>(90), new Driver<S91>(91),
                new Driver<S92>(92), new Driver<S93>(93), new Driver<S94>(94), new Driver<S95>(95),
                new Driver<S96>(96), new Driver<S97>(97), new Driver<S98>(98), new Driver<S99>(99),
                new Driver<R00>(100), new Driver<R01>(101), new Driver<R02>(102), new Driver<R03>(103),
                new Driver<R04>(104), new Driver<R05>(105), new Driver<R06>(106), new Driver<R07>(107),
                new Driver<R08>(108), new Driver<R09>(109), new Driver<R10>(110), new Driver<R11>(111),
                new Driver<R12>(112), new Driver<R13>(113), new Driver<R14>(114), new Driver<R15>(115),
                new Driver<R16>(116), new Driver<R17>(117), new Driver<R18>(118), new Driver<R19>(119),
                new Driver<R20>(120), new Driver<R21>(121), new Driver<R22>(122), new Driver<R23>(123),
                new Driver<R24>(124), new Driver<R25>(125), new Driver<R26>(126), new Driver<R27>(127),
            };
            Start = new Barrier(Threads);
            Sums = new long[Threads];
            var threads = new Thread[Threads];
            for (int t = 0; t < Threads; t++)
            {
                threads[t] = new Thread(new ParameterizedThreadStart(Work));
                threads[t].Start(t);
            }
            for (int t = 0; t < Threads; t++)
                threads[t].Join();

            bool ok = Drivers.Length == Types;
            long total = 0;
            for (int m = 0; m <= Methods; m++)
            {
                long calls = 0;
                for (int id = 0; id < Types; id++)
                {
                    long c = Tally.Calls[m * Types + id];
                    // Driver<T>.Run is called once per method and thread.
                    ok &= c == (m < Methods ? Threads : Threads * Methods);
                    calls += c;
                }
                total += calls;
                string name = m < 10 ? "Gen::G" + m : m < Methods ? "C" + (m - 10) + "`1::M" : "Driver`1::Run";
                Console.WriteLine("Concurrency." + name + " " + calls);
            }
            Console.WriteLine("Concurrency.Driver`1::.ctor " + Tally.Constructors);
            Console.WriteLine("Concurrency.Driver::.ctor " + Tally.BaseConstructors);
            Console.WriteLine("Concurrency.Program::Work " + Tally.Work);
            Console.WriteLine("Concurrency.Program::Main " + Tally.Main);
            ok &= Tally.Constructors == Types && Tally.BaseConstructors == Types;
            ok &= Tally.Work == Threads && Tally.Main == 1;
            total += Tally.Constructors + Tally.BaseConstructors + Tally.Work + Tally.Main;

            // Method m with type id returns (m + 1) * (id + 1).
            long expectedSum = 0;
            for (int m = 0; m < Methods; m++)
                for (int id = 0; id < Types; id++)
                    expectedSum += (m + 1L) * (id + 1L);
            for (int t = 0; t < Threads; t++)
            {
                Console.WriteLine("thread " + t + " sum " + Sums[t]);
                ok &= Sums[t] == expectedSum;
            }

            long expectedCalls = 2L * Threads * Types * Methods + 2 * Types + Threads + 1;
            Console.WriteLine("calls " + total);
            if (!ok || total != expectedCalls || expectedCalls != 164129 || expectedSum != 1733760)
            {
                Console.WriteLine("mismatch: the formulas say calls " + expectedCalls + ", sum " + expectedSum);
                return 99;
            }
            return 18;
        }
    }
}
