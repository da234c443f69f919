// TwoTools.exe: the program of examples/two_tools.rs (tests/clr_two_tools.rs), a timer
// of the methods whose name contains `TwoTools.Timed` and an exception counter.
//
// Calls of the timed methods (all NoInlining), each exact:
//   TwoTools.Timed::Leaf                10   (row 1 of this module: see TwoToolsLib.cs)
//   TwoTools.Timed::Fib                177   (Fib(10): 2 F(11) - 1 = 2 * 89 - 1)
//   TwoTools.Timed::Thrower              4   (throws from its body every time)
//   TwoTools.Timed::ManyLocals           3   (returns an int64 from 9 locals)
//   TwoTools.Timed/Inner::Nested         2   (a nested type)
//   TwoTools.TimedLib::Twice             6   (TwoToolsLib.dll, the other module)
// Exceptions thrown (and caught), by type:
//   System.InvalidOperationException     4   (Timed::Thrower)
//   System.ArgumentException             2   (Main)
//   TwoTools.Program/Oops                3   (Main, a nested exception type)
//   System.FormatException               1   (int.Parse("x"), thrown by the framework)
// Exits with 49; exits with 99 if a result differs from the one derived here.
using System;
using System.Runtime.CompilerServices;

namespace TwoTools
{
    public static class Timed
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Leaf(int x)
        {
            return x + 1;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Fib(int n)
        {
            return n < 2 ? n : Fib(n - 1) + Fib(n - 2);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Thrower(int i)
        {
            throw new InvalidOperationException("thrower " + i);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long ManyLocals(int seed)
        {
            long a = seed, b = a * 3, c = b + 7;
            int d = (int)(c % 11), e = d * d;
            short f = (short)(e + 1);
            double g = f / 2.0;
            string h = new string('x', d + 1);
            long i = h.Length + a + b + c + d + e + f;
            return i * 1000 + (long)g;
        }

        public static class Inner
        {
            [MethodImpl(MethodImplOptions.NoInlining)]
            public static int Nested(int x)
            {
                return x * 7;
            }
        }
    }

    public static class Program
    {
        public class Oops : Exception
        {
            public Oops(string message) : base(message)
            {
            }
        }

        static int failures;

        static void Check(string what, long got, long want)
        {
            Console.WriteLine(what + " " + got);
            if (got != want)
            {
                Console.WriteLine("  expected " + want);
                failures++;
            }
        }

        public static int Main()
        {
            int leaf = 0;
            for (int i = 0; i < 10; i++)
            {
                leaf += Timed.Leaf(i);
            }
            Check("leaf", leaf, 55);
            Check("fib", Timed.Fib(10), 55);
            int caught = 0;
            for (int i = 0; i < 4; i++)
            {
                try
                {
                    Timed.Thrower(i);
                }
                catch (InvalidOperationException)
                {
                    caught++;
                }
            }
            Check("thrower caught", caught, 4);
            long many = 0;
            for (int i = 1; i <= 3; i++)
            {
                many += Timed.ManyLocals(i);
            }
            Check("many", many, 361065);
            Check("nested", Timed.Inner.Nested(1) + Timed.Inner.Nested(2), 21);
            int twice = 0;
            for (int i = 0; i < 6; i++)
            {
                twice += TimedLib.Twice(i);
            }
            Check("twice", twice, 30);
            int other = 0;
            for (int i = 0; i < 2; i++)
            {
                try
                {
                    throw new ArgumentException("argument " + i);
                }
                catch (ArgumentException)
                {
                    other++;
                }
            }
            for (int i = 0; i < 3; i++)
            {
                try
                {
                    throw new Oops("oops " + i);
                }
                catch (Oops)
                {
                    other++;
                }
            }
            try
            {
                other += int.Parse("x");
            }
            catch (FormatException)
            {
                other++;
            }
            Check("other caught", other, 6);
            return failures == 0 ? 49 : 99;
        }
    }
}
