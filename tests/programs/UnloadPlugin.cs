// UnloadPlugin.dll: the plugin that Unload.exe loads into a collectible
// AssemblyLoadContext, calls and unloads again, once per cycle (see Unload.cs for the
// call counts). It does not reference the host: the host finds its methods by
// reflection and calls them through delegates.
//
// The calls of its methods made by one cycle of Unload.exe (cycle c, seed c):
//   UnloadPlugin.Plugin::.ctor        1   new Plugin(c), through reflection
//   UnloadPlugin.Plugin::Square       3   once from the host, twice from Chain
//   UnloadPlugin.Plugin::Scale        1   an instance method
//   UnloadPlugin.Plugin::Weigh<T>     2   once over int (unshared code), once over
//                                         string (shared code)
//   UnloadPlugin.Plugin::Guarded      1   a try/finally
//   UnloadPlugin.Plugin::Chain        1   calls Square twice
//                                   ---
//                                     9
// Every method counts its call in Plugin.Calls, a static field the host reads by
// reflection (not a method call) before it unloads the plugin; Guarded's finally counts
// its runs in Plugin.Finallies. Both fields are static fields of this load of the
// plugin, so they start at 0 in every cycle. No field has an initializer, so there is no
// class constructor; no lambda, iterator or async method. Every method is NoInlining.
//
// Built by build_framework.sh against CoreCLR's own framework assemblies.
using System.Runtime.CompilerServices;

namespace UnloadPlugin
{
    public sealed class Plugin
    {
        public static long Calls;
        public static long Finallies;

        readonly long seed;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public Plugin(int seed)
        {
            Calls++;
            this.seed = seed;
        }

        // A static method: x * x.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Square(long x)
        {
            Calls++;
            return x * x;
        }

        // An instance method: seed * x + 7.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public long Scale(long x)
        {
            Calls++;
            return seed * x + 7;
        }

        // A generic method: the length of value's text plus 2 * x.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Weigh<T>(T value, long x)
        {
            Calls++;
            T[] box = new T[1];
            box[0] = value;
            return box[0].ToString().Length + 2 * x;
        }

        // A try/finally: 3 * x, plus 1 if x is even (returned from inside the try).
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Guarded(long x)
        {
            Calls++;
            long r = 0;
            try
            {
                r = 3 * x;
                if (x % 2 == 0)
                    return r + 1;
            }
            finally
            {
                Finallies++;
            }
            return r;
        }

        // Calls another plugin method: Square(x) + Square(x + 1).
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Chain(long x)
        {
            Calls++;
            return Square(x) + Square(x + 1);
        }
    }
}
