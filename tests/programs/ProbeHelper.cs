// ProbeHelper.dll: a managed helper assembly that a profiler's injected code calls. The
// sample profiler's `helper` instrumentation method (via = "managed") adds to each
// method of the instrumented assembly, at entry:
//
//   if (Probe.Enabled != 0) {           // ldsfld: a field MemberRef
//       Probe.Enter("<assembly name>");  // ldstr: a user string; call: a method MemberRef
//       Probe.Touch<int>();              // call: a MethodSpec
//       Counter<int>.Hit();              // call: a MemberRef on a TypeSpec
//   }
//
// all defined in the instrumented module when it loads (an AssemblyRef to ProbeHelper,
// TypeRefs, MemberRefs, a TypeSpec, a MethodSpec, a user string). At exit the helper
// prints one line of its own, after the program's output:
//
//   helper: <assembly name> entered N touched N hit N
//
// Built by build.sh: mcs -sdk:4.5 -target:library -optimize+ -debug-
using System;
using System.Threading;

namespace ProbeHelper
{
    public static class Probe
    {
        // Read by the injected code before it calls anything: 0 turns the probes off.
        public static int Enabled = 1;

        static int entered;
        static int touched;
        static string assembly = "(none)";

        static Probe()
        {
            AppDomain.CurrentDomain.ProcessExit += Report;
        }

        public static void Enter(string name)
        {
            assembly = name;
            Interlocked.Increment(ref entered);
        }

        public static void Touch<T>()
        {
            if (typeof(T) == typeof(int))
                Interlocked.Increment(ref touched);
        }

        static void Report(object sender, EventArgs e)
        {
            Console.WriteLine("helper: " + assembly + " entered " + entered + " touched "
                + touched + " hit " + Counter<int>.Hits);
        }
    }

    public static class Counter<T>
    {
        public static int Hits;

        public static void Hit()
        {
            Interlocked.Increment(ref Hits);
        }
    }
}
