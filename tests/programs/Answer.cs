// Answer.exe: the smallest rewriting target. A test profiler rewrites Answer.Get to
// return another value; the program prints what Get returned and exits with it, so
// both stdout and the exit code show the rewrite. Unprofiled: prints "answer 41",
// exit code 41.
//
// Get is marked NoInlining so that it is compiled (and rewritten) on its own, whatever
// the profiler's inlining settings.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug-
using System;
using System.Runtime.CompilerServices;

class Answer
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    internal static int Get()
    {
        return 41;
    }
}

static class Program
{
    static int Main()
    {
        int answer = Answer.Get();
        Console.WriteLine("answer " + answer);
        return answer;
    }
}
