// Returns.exe: int32 results that instrumentation methods change, one line per call, so
// that the order of several edits of one method, and the isolation of one that fails,
// show in stdout. Unprofiled it prints, three times over:
//
//   Plain 10         ErrorHere 30     Branches -1 50
//   PanicHere 20     Branches 1 40    Loop 55
//   Wide 60
//
// and exits with 28. Branches has two `ret`s (mcs keeps both), Loop a backward
// branch; Wide returns int64, which an edit of int32 results leaves alone.
//
// Calls of the methods of namespace Returns: Main once, then 3 rounds of Plain,
// PanicHere, ErrorHere, Branches twice, Loop and Wide: 1 + 3 * 7 = 22.
//
// Every method is NoInlining, so each is compiled (and rewritten) on its own.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug-
using System;
using System.Runtime.CompilerServices;

namespace Returns
{
    static class Values
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Plain()
        {
            return 10;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int PanicHere()
        {
            return 20;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int ErrorHere()
        {
            return 30;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Branches(int x)
        {
            if (x > 0)
                return 40;
            return 50;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static int Loop()
        {
            int sum = 0;
            for (int i = 1; i <= 10; i++)
                sum += i;
            return sum;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static long Wide()
        {
            return 60;
        }
    }

    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Main()
        {
            for (int round = 0; round < 3; round++)
            {
                Console.WriteLine("Plain " + Values.Plain());
                Console.WriteLine("PanicHere " + Values.PanicHere());
                Console.WriteLine("ErrorHere " + Values.ErrorHere());
                Console.WriteLine("Branches 1 " + Values.Branches(1));
                Console.WriteLine("Branches -1 " + Values.Branches(-1));
                Console.WriteLine("Loop " + Values.Loop());
                Console.WriteLine("Wide " + Values.Wide());
            }
            return 28;
        }
    }
}
