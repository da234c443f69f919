// HostileDial.exe: a program driven line by line through stdin, like Dial.exe, whose
// methods have the shapes a ReJIT dial finds hard: exception handling (filters,
// finallies, rethrow), generic methods and methods of generic types over value and
// reference types, a value type's instance method, constructors, a static constructor
// (a type initializer that runs once), virtual and interface methods, a nested type,
// deep recursion with a method on the stack while it is changed, a loop that runs in
// another thread while it is changed, and 64 methods never called until asked for.
// Every result is a small int32 (or a count), so a `scale` or an `offset` of any of
// these methods shows in the next answer that prints it.
//
// Protocol: one command per line on stdin (surrounding blanks ignored); each is answered
// with zero or more lines on stdout and then a line `done`; stdout is flushed after
// every `done`. Nothing else is ever written to stdout, and nothing to stderr. At EOF
// or on `quit` the program stops the threads of `start`, `hold` and `spin` if there are
// any (printing nothing for them), prints `bye` (no `done` after it) and exits with code
// 43. So with stdin closed it prints only `bye` (expected/HostileDial.out).
//
//   eh         one call each, one line each:
//                `Filter 20`   HostileDial.Eh::Filter(2): Thrower(2) throws an
//                              InvalidOperationException("two"), caught by a catch
//                              with a filter (`when`) that accepts it: 20 (another
//                              message: 21; no exception: 1)
//                `Finally 12`  Eh::Finally(2): x + 10 returned from inside a try whose
//                              finally counts its runs in Eh.Finallies
//                `Nested 141`  Eh::Nested(2): Thrower throws inside a try/catch/finally
//                              nested in a try/catch; the inner catch sets 40 and
//                              rethrows (`throw;`), the inner finally adds 1, the outer
//                              catch adds 100
//   gen        one call each, one line each:
//                `Tag int 50`, `Tag string 50`, `Tag pair 50`
//                              the generic method Gen::Tag<T>(T) (50: the length of a
//                              one-element T[] times 50) over int (unshared code),
//                              string (shared code) and the struct Pair (unshared)
//                `Cell int 60`, `Cell long 60`, `Cell string 60`
//                              Cell`1::Get() (60, or 0 for a null item) on new
//                              Cell<T>(item) over int, long and string (constructor
//                              Cell`1::.ctor)
//                `Pair 7`      Pair::Sum() on new Pair(3, 4): an instance method of a
//                              value type (`this` a managed pointer)
//   obj        `Obj 70`: new Obj(7).Get(): Obj's constructor stores seed * 10 and Get
//              returns it
//   lazy       `Lazy 80`: Lazy::Read() returns the static field Lazy.Value. Lazy has a
//              static constructor (no beforefieldinit) that sets Value = Compute() (80),
//              run by the runtime before the first `lazy` reads the field, and never
//              again. Nothing else touches Lazy: before the first `lazy`, neither its
//              constructor nor Compute nor Read has run
//   virt       `Area 90` (Shape::Area, abstract, called on a Square: Square::Area),
//              `IArea 90` (IArea::Area on the same Square, through the interface),
//              `Sides 4` (Shape::Sides, virtual, 0, overridden by Square::Sides). The
//              Square comes from a NoInlining factory, so the calls stay virtual
//   nested     `Inner 110`: HostileDial.Outer/Inner::Value(), a method of a nested
//              type (metadata name Inner, enclosing type HostileDial.Outer)
//   deep N     `Deep R`: Rec::Down(N) = N + 1 (Down(0) = 1, Down(n) = Down(n - 1) + 1;
//              not a tail call: the addition follows the call), on the main thread;
//              0 <= N <= 10000
//   hold N     starts a thread (1 MiB stack) that calls Rec::Hold(N, true) (the same
//              recursion as Down: Hold(0, block) = 1, Hold(n, block) = Hold(n - 1,
//              block) + 1), which at the bottom (n = 0) waits until `release`: N + 1
//              frames of Hold are then on that thread's stack. Returns once the bottom
//              is reached and prints `holding N`. 0 <= N <= 10000; while a hold is
//              running, `hold` prints `already holding`
//   call N     `Hold R`: Rec::Hold(N, false) on the main thread (N + 1, no waiting);
//              0 <= N <= 10000
//   release    lets the held thread's bottom frame return, joins the thread and prints
//              `Held R`, the result of the held call (N + 1); without a hold, `not
//              holding`
//   spin       starts a thread that calls Spin::Loop(), which counts in a loop until
//              Spin.Stop is set, stores the count in Spin.Spins and returns 100; returns once the loop runs and
//              prints `spinning`; while one runs, `already spinning`
//   unspin     sets Spin.Stop, joins the thread and prints `Spun 100`, the result of
//              the loop's call; without a spin, `not spinning`
//   loop       `Loop 100`: with Spin.Stop set (no spin running), Spin::Loop() on the
//              main thread returns at once; during a spin, `busy`
//   pick       `Pick 130`: Choice::Pick(1), which returns x >= 0 ? 130 : 0: a
//              conditional expression whose value 130 reaches the method's only `ret`
//              by a branch
//   fresh I    `Fresh I V`: Fresh::MI() (I two digits, 00 .. 63: M00 .. M63) returns
//              V = 1000 + I. Nothing else calls them: before its first `fresh`, a
//              method MI has never run nor been JIT-compiled
//   start T    starts T threads (1 <= T <= 64) that each call, in a loop until `stop`,
//              Eh::Filter(2), Gen::Tag<int>, Gen::Tag<string>, Cell<long>::Get and
//              Shape::Area (on a Square), each keeping a count per result of each;
//              returns when every thread has made at least one round, and prints
//              `started T`; while they run, `already started`
//   stop       stops and joins them, merges their counts and prints `rounds C` (the
//              rounds made, C >= T), then `seen NAME VALUE count N` for each distinct
//              (name, result), ordered by name (ordinal: Area, Cell, Filter, TagInt,
//              TagString), then by value. Unprofiled: `seen Area 90 count C`, `seen
//              Cell 60 count C`, `seen Filter 20 count C`, `seen TagInt 50 count C`,
//              `seen TagString 50 count C`. Without threads running, `not started`
//   gc         GC.Collect(); GC.WaitForPendingFinalizers(); prints `gc`
//   quit       see above
//   (empty)    an empty line is answered with `done` alone
//   anything else
//              `unknown LINE` (the line, blanks trimmed); so is a command whose count
//              is missing, not a number or out of range. The program goes on.
//
// Every method is NoInlining (constructors included), so that a change shows at the
// next call and no caller keeps an inlined copy.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug-.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Runtime.CompilerServices;
using System.Threading;

namespace HostileDial
{
    static class Eh
    {
        internal static int Finallies;

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static void Thrower(int x)
        {
            if (x == 2)
                throw new InvalidOperationException("two");
            if (x > 2)
                throw new InvalidOperationException("more");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Filter(int x)
        {
            try
            {
                Thrower(x);
                return 1;
            }
            catch (InvalidOperationException e) when (e.Message == "two")
            {
                return 20;
            }
            catch (InvalidOperationException)
            {
                return 21;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Finally(int x)
        {
            int r = x;
            try
            {
                r += 10;
                if (x > 0)
                    return r;
                r = -1;
            }
            finally
            {
                Finallies++;
            }
            return r;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Nested(int x)
        {
            int r = 0;
            try
            {
                try
                {
                    Thrower(x);
                    r = 1;
                }
                catch (InvalidOperationException)
                {
                    r = 40;
                    throw;
                }
                finally
                {
                    r += 1;
                }
            }
            catch (Exception)
            {
                r += 100;
            }
            return r;
        }
    }

    struct Pair
    {
        internal int A;
        internal int B;

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal Pair(int a, int b)
        {
            A = a;
            B = b;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal int Sum()
        {
            return A + B;
        }
    }

    static class Gen
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Tag<T>(T value)
        {
            T[] box = new T[] { value };
            return box.Length * 50;
        }
    }

    sealed class Cell<T>
    {
        internal readonly T Item;

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal Cell(T item)
        {
            Item = item;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal int Get()
        {
            return Item == null ? 0 : 60;
        }
    }

    sealed class Obj
    {
        readonly int value;

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal Obj(int seed)
        {
            value = seed * 10;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal int Get()
        {
            return value;
        }
    }

    static class Lazy
    {
        internal static readonly int Value;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static Lazy()
        {
            Value = Compute();
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Compute()
        {
            return 80;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Read()
        {
            return Value;
        }
    }

    interface IArea
    {
        int Area();
    }

    abstract class Shape : IArea
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        protected Shape()
        {
        }

        public abstract int Area();

        [MethodImpl(MethodImplOptions.NoInlining)]
        public virtual int Sides()
        {
            return 0;
        }
    }

    sealed class Square : Shape
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        internal Square()
        {
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public override int Area()
        {
            return 90;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public override int Sides()
        {
            return 4;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static Shape Make()
        {
            return new Square();
        }
    }

    static class Outer
    {
        internal static class Inner
        {
            [MethodImpl(MethodImplOptions.NoInlining)]
            internal static int Value()
            {
                return 110;
            }
        }
    }

    static class Rec
    {
        internal static readonly object Gate = new object();
        internal static bool AtBottom;
        internal static bool Released;

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Down(int n)
        {
            if (n == 0)
                return 1;
            return Down(n - 1) + 1;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Hold(int n, bool block)
        {
            if (n == 0)
            {
                if (block)
                    Bottom();
                return 1;
            }
            return Hold(n - 1, block) + 1;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Bottom()
        {
            lock (Gate)
            {
                AtBottom = true;
                Monitor.PulseAll(Gate);
                while (!Released)
                    Monitor.Wait(Gate);
            }
        }
    }

    static class Spin
    {
        internal static volatile bool Stop = true;
        internal static volatile bool Running;
        // The iterations of the last loop (read by nothing: it keeps the loop's work).
        internal static long Spins;

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Loop()
        {
            long n = 0;
            Running = true;
            while (!Stop)
                n++;
            Spins = n;
            return 100;
        }
    }

    static class Choice
    {
        // A conditional expression: its two values meet at the method's one `ret`, and
        // the path of 130 branches there.
        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Pick(int x)
        {
            return x >= 0 ? 130 : 0;
        }
    }

    static class Fresh
    {
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M00() { return 1000; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M01() { return 1001; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M02() { return 1002; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M03() { return 1003; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M04() { return 1004; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M05() { return 1005; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M06() { return 1006; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M07() { return 1007; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M08() { return 1008; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M09() { return 1009; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M10() { return 1010; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M11() { return 1011; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M12() { return 1012; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M13() { return 1013; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M14() { return 1014; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M15() { return 1015; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M16() { return 1016; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M17() { return 1017; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M18() { return 1018; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M19() { return 1019; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M20() { return 1020; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M21() { return 1021; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M22() { return 1022; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M23() { return 1023; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M24() { return 1024; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M25() { return 1025; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M26() { return 1026; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M27() { return 1027; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M28() { return 1028; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M29() { return 1029; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M30() { return 1030; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M31() { return 1031; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M32() { return 1032; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M33() { return 1033; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M34() { return 1034; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M35() { return 1035; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M36() { return 1036; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M37() { return 1037; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M38() { return 1038; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M39() { return 1039; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M40() { return 1040; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M41() { return 1041; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M42() { return 1042; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M43() { return 1043; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M44() { return 1044; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M45() { return 1045; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M46() { return 1046; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M47() { return 1047; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M48() { return 1048; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M49() { return 1049; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M50() { return 1050; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M51() { return 1051; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M52() { return 1052; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M53() { return 1053; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M54() { return 1054; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M55() { return 1055; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M56() { return 1056; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M57() { return 1057; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M58() { return 1058; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M59() { return 1059; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M60() { return 1060; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M61() { return 1061; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M62() { return 1062; }
        [MethodImpl(MethodImplOptions.NoInlining)] internal static int M63() { return 1063; }

        // The method MI for I in 0 .. 63.
        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Call(int i)
        {
            switch (i)
            {
                case 0: return M00();
                case 1: return M01();
                case 2: return M02();
                case 3: return M03();
                case 4: return M04();
                case 5: return M05();
                case 6: return M06();
                case 7: return M07();
                case 8: return M08();
                case 9: return M09();
                case 10: return M10();
                case 11: return M11();
                case 12: return M12();
                case 13: return M13();
                case 14: return M14();
                case 15: return M15();
                case 16: return M16();
                case 17: return M17();
                case 18: return M18();
                case 19: return M19();
                case 20: return M20();
                case 21: return M21();
                case 22: return M22();
                case 23: return M23();
                case 24: return M24();
                case 25: return M25();
                case 26: return M26();
                case 27: return M27();
                case 28: return M28();
                case 29: return M29();
                case 30: return M30();
                case 31: return M31();
                case 32: return M32();
                case 33: return M33();
                case 34: return M34();
                case 35: return M35();
                case 36: return M36();
                case 37: return M37();
                case 38: return M38();
                case 39: return M39();
                case 40: return M40();
                case 41: return M41();
                case 42: return M42();
                case 43: return M43();
                case 44: return M44();
                case 45: return M45();
                case 46: return M46();
                case 47: return M47();
                case 48: return M48();
                case 49: return M49();
                case 50: return M50();
                case 51: return M51();
                case 52: return M52();
                case 53: return M53();
                case 54: return M54();
                case 55: return M55();
                case 56: return M56();
                case 57: return M57();
                case 58: return M58();
                case 59: return M59();
                case 60: return M60();
                case 61: return M61();
                case 62: return M62();
                default: return M63();
            }
        }
    }

    // One thread of `start`: counts per (name, result).
    sealed class Worker
    {
        internal static volatile bool Stopping;
        internal static int Ready;
        internal static readonly object Gate = new object();

        internal readonly Dictionary<string, long> Counts = new Dictionary<string, long>();
        internal long Rounds;
        internal Thread Thread;

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal Worker()
        {
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal void Run()
        {
            bool first = true;
            Shape shape = Square.Make();
            do
            {
                Count("Filter", Eh.Filter(2));
                Count("TagInt", Gen.Tag<int>(1));
                Count("TagString", Gen.Tag<string>("s"));
                Count("Cell", new Cell<long>(1).Get());
                Count("Area", shape.Area());
                Rounds++;
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
        void Count(string name, int value)
        {
            string key = name + " " + value.ToString(CultureInfo.InvariantCulture);
            long n;
            Counts.TryGetValue(key, out n);
            Counts[key] = n + 1;
        }
    }

    static class Program
    {
        const int ExitCode = 43;
        const int MaxThreads = 64;
        const int MaxDepth = 10000;

        static List<Worker> workers;
        static Thread holder;
        static int held;
        static Thread spinner;
        static int spun;

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
            if (holder != null)
                Release();
            if (spinner != null)
                Unspin();
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
            bool one = words.Length == 1;
            bool two = words.Length == 2;
            switch (words[0])
            {
                case "eh":
                    if (!one)
                        break;
                    Print("Filter", Eh.Filter(2));
                    Print("Finally", Eh.Finally(2));
                    Print("Nested", Eh.Nested(2));
                    return;
                case "gen":
                    if (!one)
                        break;
                    Print("Tag int", Gen.Tag<int>(1));
                    Print("Tag string", Gen.Tag<string>("s"));
                    Print("Tag pair", Gen.Tag<Pair>(new Pair(1, 2)));
                    Print("Cell int", new Cell<int>(1).Get());
                    Print("Cell long", new Cell<long>(1).Get());
                    Print("Cell string", new Cell<string>("s").Get());
                    Print("Pair", new Pair(3, 4).Sum());
                    return;
                case "obj":
                    if (!one)
                        break;
                    Print("Obj", new Obj(7).Get());
                    return;
                case "lazy":
                    if (!one)
                        break;
                    Print("Lazy", Lazy.Read());
                    return;
                case "virt":
                    if (!one)
                        break;
                    Virt();
                    return;
                case "nested":
                    if (!one)
                        break;
                    Print("Inner", Outer.Inner.Value());
                    return;
                case "deep":
                    if (!two || !Count(words[1], MaxDepth, out n))
                        break;
                    Print("Deep", Rec.Down(n));
                    return;
                case "hold":
                    if (!two || !Count(words[1], MaxDepth, out n))
                        break;
                    Hold(n);
                    return;
                case "call":
                    if (!two || !Count(words[1], MaxDepth, out n))
                        break;
                    Print("Hold", Rec.Hold(n, false));
                    return;
                case "release":
                    if (!one)
                        break;
                    if (holder == null)
                        Console.Out.WriteLine("not holding");
                    else
                        Print("Held", Release());
                    return;
                case "spin":
                    if (!one)
                        break;
                    StartSpin();
                    return;
                case "unspin":
                    if (!one)
                        break;
                    if (spinner == null)
                        Console.Out.WriteLine("not spinning");
                    else
                        Print("Spun", Unspin());
                    return;
                case "loop":
                    if (!one)
                        break;
                    if (spinner != null)
                        Console.Out.WriteLine("busy");
                    else
                        Print("Loop", Spin.Loop());
                    return;
                case "pick":
                    if (!one)
                        break;
                    Print("Pick", Choice.Pick(1));
                    return;
                case "fresh":
                    if (!two || words[1].Length != 2 || !Count(words[1], 63, out n))
                        break;
                    Console.Out.WriteLine("Fresh " + words[1] + " "
                        + Fresh.Call(n).ToString(CultureInfo.InvariantCulture));
                    return;
                case "start":
                    if (!two || !Count(words[1], MaxThreads, out n) || n < 1)
                        break;
                    Start(n);
                    return;
                case "stop":
                    if (!one)
                        break;
                    Stop();
                    return;
                case "gc":
                    if (!one)
                        break;
                    GC.Collect();
                    GC.WaitForPendingFinalizers();
                    Console.Out.WriteLine("gc");
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
        static void Virt()
        {
            Shape shape = Square.Make();
            IArea area = shape;
            Print("Area", shape.Area());
            Print("IArea", area.Area());
            Print("Sides", shape.Sides());
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Hold(int depth)
        {
            if (holder != null)
            {
                Console.Out.WriteLine("already holding");
                return;
            }
            lock (Rec.Gate)
            {
                Rec.AtBottom = false;
                Rec.Released = false;
            }
            holder = new Thread(() => { held = Rec.Hold(depth, true); }, 1024 * 1024);
            holder.IsBackground = true;
            holder.Start();
            lock (Rec.Gate)
            {
                while (!Rec.AtBottom)
                    Monitor.Wait(Rec.Gate);
            }
            Print("holding", depth);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Release()
        {
            lock (Rec.Gate)
            {
                Rec.Released = true;
                Monitor.PulseAll(Rec.Gate);
            }
            holder.Join();
            holder = null;
            return held;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void StartSpin()
        {
            if (spinner != null)
            {
                Console.Out.WriteLine("already spinning");
                return;
            }
            Spin.Running = false;
            Spin.Stop = false;
            spinner = new Thread(() => { spun = Spin.Loop(); });
            spinner.IsBackground = true;
            spinner.Start();
            while (!Spin.Running)
                Thread.Sleep(1);
            Console.Out.WriteLine("spinning");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Unspin()
        {
            Spin.Stop = true;
            spinner.Join();
            spinner = null;
            return spun;
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
            var counts = new Dictionary<string, long>();
            long rounds = 0;
            foreach (Worker worker in stopped)
            {
                foreach (KeyValuePair<string, long> pair in worker.Counts)
                {
                    long n;
                    counts.TryGetValue(pair.Key, out n);
                    counts[pair.Key] = n + pair.Value;
                }
                rounds += worker.Rounds;
            }
            Console.Out.WriteLine("rounds " + rounds.ToString(CultureInfo.InvariantCulture));
            var keys = new List<string>(counts.Keys);
            keys.Sort(CompareKeys);
            foreach (string key in keys)
                Console.Out.WriteLine("seen " + key + " count "
                    + counts[key].ToString(CultureInfo.InvariantCulture));
        }

        // By name (ordinal), then by value (numeric).
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int CompareKeys(string a, string b)
        {
            int sa = a.IndexOf(' ');
            int sb = b.IndexOf(' ');
            int byName = string.CompareOrdinal(a.Substring(0, sa), b.Substring(0, sb));
            if (byName != 0)
                return byName;
            long va = long.Parse(a.Substring(sa + 1), CultureInfo.InvariantCulture);
            long vb = long.Parse(b.Substring(sb + 1), CultureInfo.InvariantCulture);
            return va.CompareTo(vb);
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
    }
}
