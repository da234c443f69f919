// Unload.exe: loads the plugin UnloadPlugin.dll (UnloadPlugin.cs, beside this
// program) into a collectible AssemblyLoadContext, calls its methods, drops every
// reference, unloads the context and collects until it is gone; N cycles (N from the
// first argument, default 1000). Every cycle loads the file again
// (LoadFromAssemblyPath), so a profiler sees N loads and N unloads of a module and
// JIT-compiles the plugin's methods again in each. Exit code 25 (99 if a result or a
// count differs from the formulas below, 98 if a context was not collected after 100
// collections).
//
// One cycle, c = 0 .. N - 1 (RunCycle): a new AssemblyLoadContext("UnloadPlugin c",
// isCollectible: true); LoadFromAssemblyPath(AppContext.BaseDirectory +
// "UnloadPlugin.dll"); Activator.CreateInstance(Plugin, c), delegates to the plugin's
// methods (MethodInfo.CreateDelegate) and one call of each; it reads the plugin's call
// counter (a static field, by reflection), calls Unload() and returns only a
// WeakReference to the context. WaitForUnload then runs GC.Collect and
// WaitForPendingFinalizers until the reference is dead (at most 100 times).
//
// The value of cycle c (Expected computes it from the formulas, without the plugin):
//   Square(c)                    c^2
//   3 * Scale(c + 1)             3 * (c * (c + 1) + 7)           (seed c)
//   5 * Weigh<int>(c, c)         5 * (digits(c) + 2c)            (the text of c)
//   7 * Weigh<string>("p" + c, c + 1)
//                                7 * (1 + digits(c) + 2(c + 1))
//   11 * Guarded(c)              11 * (3c + 1 if c is even, else 3c)
//   13 * Chain(c)                13 * (c^2 + (c + 1)^2)
//   17 * Finallies               17 * 1                          (Guarded's finally)
// and the checksum is their sum over all cycles.
//
// The calls of the methods of namespace UnloadPlugin (the plugin; derivation in
// UnloadPlugin.cs): 9 per cycle (Plugin::.ctor 1, Square 3, Scale 1, Weigh<T> 2,
// Guarded 1, Chain 1):
//   all methods of UnloadPlugin.*      9N        (N = 1000: 9,000)
// The calls of the methods of namespace Unload (this program; every method that runs):
//   Unload.Program::Main               1
//   Unload.Program::RunCycle           N
//   Unload.Program::WaitForUnload      N         (its collection loop is inside it)
//   Unload.Program::Expected           N
//   Unload.Program::MeasureRss         2         (after the warm-up and at the end)
//   all methods of Unload.*            3N + 3    (N = 1000: 3,003)
// No other method of the namespace runs: no class constructor (no static field has an
// initializer), no lambda, iterator or async method, no subclass of
// AssemblyLoadContext (whose Load override would run for each of the plugin's
// references). Every method is NoInlining. The plugin counts its calls in a static field
// of its own (fresh in every load); this program counts its own in Tally's fields; Main
// checks both against the formulas.
//
// The JIT compilations with tiered compilation off: 7 of the plugin's methods per
// cycle (Plugin::.ctor, Square, Scale, Guarded, Chain, Weigh over int and Weigh's shared
// code for string), 7N in all, each load being a new module; the 5 methods of
// Unload.Program once each. Unprofiled on CoreCLR 3.1.23, every context was dead after
// exactly 2 collections.
//
// Output (stdout, the same for the same N): the cycles, the checksum, the cycles whose
// context was collected, and the two call counts. Resident memory goes to stderr, one
// line, since it varies: `unload: rss-growth-per-cycle-bytes <integer>`, the growth of
// VmRSS (/proc/self/status, after a full collection) from the end of the warm-up (the
// first N / 10 cycles) to the end, divided by the cycles after the warm-up.
//
// Built by build_framework.sh: mcs -nostdlib against CoreCLR 3.1.23's own
// System.Private.CoreLib, System.Runtime and System.Runtime.Loader (AssemblyLoadContext
// is not in Mono's reference assemblies), -optimize+ -debug-.
using System;
using System.Globalization;
using System.IO;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.Loader;

namespace Unload
{
    // The program's own call counts; static fields without initializers (no class
    // constructor), incremented directly (no method call).
    static class Tally
    {
        public static long Main, RunCycle, WaitForUnload, Expected, MeasureRss;
    }

    static class Program
    {
        const int PluginCallsPerCycle = 9;
        const int MaxCollections = 100;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Main(string[] args)
        {
            Tally.Main++;
            int n = args.Length > 0 ? int.Parse(args[0], CultureInfo.InvariantCulture) : 1000;
            if (n < 0)
            {
                Console.WriteLine("usage: Unload.exe [cycles >= 0]");
                return 2;
            }
            string path = Path.Combine(AppContext.BaseDirectory, "UnloadPlugin.dll");
            int warm = n / 10;
            long rssWarm = 0;
            long checksum = 0, expectedChecksum = 0, pluginCalls = 0, unloaded = 0;
            bool ok = true;
            for (int c = 0; c < n; c++)
            {
                if (c == warm)
                    rssWarm = MeasureRss();
                long calls;
                WeakReference context;
                long value = RunCycle(path, c, out calls, out context);
                if (!WaitForUnload(context))
                {
                    Console.WriteLine("cycle " + c + ": the load context is alive after "
                        + MaxCollections + " collections");
                    return 98;
                }
                unloaded++;
                long expected = Expected(c);
                if (value != expected || calls != PluginCallsPerCycle)
                {
                    Console.WriteLine("cycle " + c + ": value " + value + " calls " + calls
                        + ", the formulas say " + expected + " and " + PluginCallsPerCycle);
                    ok = false;
                }
                checksum += value;
                expectedChecksum += expected;
                pluginCalls += calls;
            }
            // Only for N = 0 (N / 10 < N otherwise): MeasureRss runs twice for every N.
            if (warm >= n)
                rssWarm = MeasureRss();
            long rssEnd = MeasureRss();
            long growth = n > warm ? (rssEnd - rssWarm) / (n - warm) : 0;
            Console.Error.WriteLine("unload: rss-growth-per-cycle-bytes " + growth);

            long hostCalls = Tally.Main + Tally.RunCycle + Tally.WaitForUnload + Tally.Expected
                + Tally.MeasureRss;
            Console.WriteLine("cycles " + n);
            Console.WriteLine("checksum " + checksum);
            Console.WriteLine("unloaded " + unloaded);
            Console.WriteLine("calls UnloadPlugin.* " + pluginCalls);
            Console.WriteLine("calls Unload.* " + hostCalls);
            long expectedPluginCalls = (long)PluginCallsPerCycle * n;
            long expectedHostCalls = 3L * n + 3;
            ok &= checksum == expectedChecksum && unloaded == n;
            ok &= pluginCalls == expectedPluginCalls && hostCalls == expectedHostCalls;
            ok &= Tally.Main == 1 && Tally.RunCycle == n && Tally.WaitForUnload == n
                && Tally.Expected == n && Tally.MeasureRss == 2;
            if (!ok)
            {
                Console.WriteLine("mismatch: the formulas say checksum " + expectedChecksum
                    + ", calls UnloadPlugin.* " + expectedPluginCalls + ", calls Unload.* "
                    + expectedHostCalls);
                return 99;
            }
            return 25;
        }

        // One cycle: load, call, unload. Returns the cycle's value; everything that
        // refers to the plugin stays in this frame, which is gone when it returns.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static long RunCycle(string path, int c, out long calls, out WeakReference context)
        {
            Tally.RunCycle++;
            var alc = new AssemblyLoadContext("UnloadPlugin " + c, true);
            context = new WeakReference(alc);
            Assembly assembly = alc.LoadFromAssemblyPath(path);
            Type plugin = assembly.GetType("UnloadPlugin.Plugin", true);
            object instance = Activator.CreateInstance(plugin, new object[] { c });
            var square = (Func<long, long>)plugin.GetMethod("Square")
                .CreateDelegate(typeof(Func<long, long>));
            var scale = (Func<long, long>)plugin.GetMethod("Scale")
                .CreateDelegate(typeof(Func<long, long>), instance);
            MethodInfo weigh = plugin.GetMethod("Weigh");
            var weighInt = (Func<int, long, long>)weigh.MakeGenericMethod(typeof(int))
                .CreateDelegate(typeof(Func<int, long, long>));
            var weighString = (Func<string, long, long>)weigh.MakeGenericMethod(typeof(string))
                .CreateDelegate(typeof(Func<string, long, long>));
            var guarded = (Func<long, long>)plugin.GetMethod("Guarded")
                .CreateDelegate(typeof(Func<long, long>));
            var chain = (Func<long, long>)plugin.GetMethod("Chain")
                .CreateDelegate(typeof(Func<long, long>));

            long value = square(c);
            value += 3 * scale(c + 1);
            value += 5 * weighInt(c, c);
            value += 7 * weighString("p" + c.ToString(CultureInfo.InvariantCulture), c + 1);
            value += 11 * guarded(c);
            value += 13 * chain(c);
            value += 17 * (long)plugin.GetField("Finallies").GetValue(null);
            calls = (long)plugin.GetField("Calls").GetValue(null);
            alc.Unload();
            return value;
        }

        // Collects until the context is gone; false if it is alive after MaxCollections.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static bool WaitForUnload(WeakReference context)
        {
            Tally.WaitForUnload++;
            for (int i = 0; i < MaxCollections && context.IsAlive; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            return !context.IsAlive;
        }

        // The value of cycle c from the formulas in the header.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Expected(int c)
        {
            Tally.Expected++;
            long digits = 1;
            for (int x = c; x >= 10; x /= 10)
                digits++;
            long v = (long)c * c;
            v += 3 * ((long)c * (c + 1) + 7);
            v += 5 * (digits + 2L * c);
            v += 7 * (1 + digits + 2L * (c + 1));
            v += 11 * (3L * c + (c % 2 == 0 ? 1 : 0));
            v += 13 * ((long)c * c + (c + 1L) * (c + 1));
            v += 17;
            return v;
        }

        // VmRSS in bytes after a full collection.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static long MeasureRss()
        {
            Tally.MeasureRss++;
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
            using (var reader = new StreamReader("/proc/self/status"))
            {
                string line;
                while ((line = reader.ReadLine()) != null)
                {
                    if (!line.StartsWith("VmRSS:", StringComparison.Ordinal))
                        continue;
                    // "VmRSS:	   12345 kB"
                    string[] parts = line.Substring(6).Trim().Split(' ');
                    return long.Parse(parts[0], CultureInfo.InvariantCulture) * 1024;
                }
            }
            return 0;
        }
    }
}
