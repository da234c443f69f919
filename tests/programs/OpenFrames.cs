// OpenFrames.exe: threads still inside the program's methods when it exits. For the
// sample profiler's `wrap` summary, which tells frames still open at shutdown from
// exits that were lost (tests/clr_e2e.rs).
//
// Two background threads stop inside methods of OpenFrames.* and never return:
//
//   Holder:  Hold -> Outer(3) -> Outer(2) -> Outer(1) -> Outer(0) -> Park   6 frames
//            (Park sleeps forever)
//   Waiter:  Wait -> Block                                                   2 frames
//            (Block waits on a monitor nobody pulses)
//
// so 8 frames of OpenFrames.* are open when Main returns (OPEN_FRAMES_LEFT_OPEN in
// the harness). A third thread, Worker (Work -> Fib(10): 1 + 177 calls), and Main's own
// calls (Main, the static constructor, Ready twice) all end before Main returns.
// Every method's calls of OpenFrames.*, in total: Main 1, .cctor 1, Hold 1, Outer 4,
// Park 1, Wait 1, Block 1, Ready 2, Work 1, Fib 177: 190 enters, 182 exits.
//
// Outer is not a tail call (it adds 1 to what the level below returns) and every
// method is NoInlining, so each level is a frame. Main prints `fib 55` and `open 8`
// and exits with 48; the process ends with the two background threads still blocked.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug-
using System;
using System.Runtime.CompilerServices;
using System.Threading;

namespace OpenFrames
{
    static class Program
    {
        static readonly CountdownEvent ready = new CountdownEvent(2);
        static readonly object gate = new object();
        static int fib;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Ready() { ready.Signal(); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Park()
        {
            Ready();
            Thread.Sleep(Timeout.Infinite);
            return 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Outer(int n)
        {
            int below = n == 0 ? Park() : Outer(n - 1);
            return below + 1;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Hold() { Outer(3); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Block()
        {
            lock (gate)
            {
                Ready();
                Monitor.Wait(gate);
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Wait() { Block(); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Fib(int n) { return n < 2 ? n : Fib(n - 1) + Fib(n - 2); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Work() { fib = Fib(10); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Main()
        {
            var holder = new Thread(Hold) { IsBackground = true };
            var waiter = new Thread(Wait) { IsBackground = true };
            holder.Start();
            waiter.Start();
            ready.Wait();
            var worker = new Thread(Work);
            worker.Start();
            worker.Join();
            Console.WriteLine("fib " + fib);
            Console.WriteLine("open 8");
            return 48;
        }
    }
}
