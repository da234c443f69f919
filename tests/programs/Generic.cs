// Generic.exe: one generic method, Generic.Gen.Show<T>, instantiated over several
// types, so that the runtime JIT-compiles its one method body several times (once per
// value type, once for all reference types, which share code): a profiler must
// instrument it once. Also a method of a generic type (Holder<T>.Echo) over a value
// type and a reference type. Exit code 15.
//
// Show<T> is compiled 6 times: for int, long, double, Point, int? and once for the
// shared reference-type code (string, object, List<int>, int[]). Holder<T>.Echo is
// compiled twice (int, shared). Each instantiation is called once or more, so
// tiered compilation does not recompile any of them.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug-
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;

namespace Generic
{
    struct Point
    {
        public int X, Y;
        public Point(int x, int y) { X = x; Y = y; }
        public override string ToString() { return X + ";" + Y; }
    }

    static class Gen
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static string Show<T>(T value)
        {
            return typeof(T).Name + "=" + (value == null ? "null" : value.ToString());
        }
    }

    sealed class Holder<T>
    {
        readonly T held;
        public Holder(T held) { this.held = held; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public T Echo() { return held; }
    }

    static class Program
    {
        static int Main()
        {
            Console.WriteLine(Gen.Show(1));
            Console.WriteLine(Gen.Show(2L));
            Console.WriteLine(Gen.Show(0.5));
            Console.WriteLine(Gen.Show(new Point(3, 4)));
            Console.WriteLine(Gen.Show<int?>(5));
            Console.WriteLine(Gen.Show<int?>(null));
            Console.WriteLine(Gen.Show("text"));
            Console.WriteLine(Gen.Show(new object()));
            Console.WriteLine(Gen.Show(new List<int> { 1, 2 }));
            Console.WriteLine(Gen.Show(new int[0]));
            Console.WriteLine(Gen.Show<string>(null));
            Console.WriteLine("echo " + new Holder<int>(7).Echo() + " " + new Holder<string>("seven").Echo());
            return 15;
        }
    }
}
