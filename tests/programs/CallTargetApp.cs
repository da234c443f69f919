// CallTargetApp.exe: targets for CallTarget (issue 32) that print their own trace, so a
// test can compare what the hooks saw (CallTargetIntegrations.dll's Recorder, whose
// `ct ...` lines fall between these on the same thread) with what the program passed,
// returned and threw; and the self-test of ILRewrite.CallTarget.dll's AsyncEnd.
//
//   CallTargetApp.exe            the targets; exit code 50 (99 if the threads' sums
//                                are not the formula's)
//   CallTargetApp.exe selftest   AsyncEnd's self-test: `selftest ok N` and exit 0, or a
//                                `selftest FAIL ...` line per mismatch and exit 99
//
// The program's trace lines name a target as the Recorder does: typeof(declaring
// type).ToString() + "::" + the method's name:
//   call <target> <arg1> ... <argN>   first thing in the target's body: ToString() of each
//                                     argument as the target received it (what the
//                                     begin hook sees; for an `out` parameter, the
//                                     caller's variable, printed by the caller as
//                                     `out-before`)
//   return <target> <value>           just before each return (`void` for void)
//   throw <target> <exception type>   just before a throw
// and, at the call sites, what the caller observed afterwards (a struct's fields, `ref`
// and `out` variables, the exception caught and whether it is the object the target
// threw: `same True`, the result an `await` gave). Async targets print `call` in their
// synchronous part only (their continuations run on the thread pool); the caller
// prints what `await` gave. The 8 threads of `threads` call `Shared`'s targets, which
// print nothing: the threads' sums are printed after the joins.
//
// Every target is NoInlining (a Recorder names its target from its caller's frame).
// Sections: statics, instances, refout, generics, structs, recursion, exceptions,
// async, threads. Deterministic stdout; nothing on stderr.
//
// Built by build_framework.sh against CoreCLR's System.Private.CoreLib (ValueTask<T>,
// async ValueTask<T> methods), referencing ILRewrite.CallTarget.dll (the self-test).
using System;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;
using System.Threading.Tasks.Sources;
using ILRewrite.CallTarget;

namespace CallTargetApp
{
    public enum Color { Red, Green, Blue }

    public struct Point
    {
        public int X;
        public int Y;

        public Point(int x, int y)
        {
            X = x;
            Y = y;
        }

        public override string ToString()
        {
            return "(" + X + "," + Y + ")";
        }
    }

    static class Log
    {
        internal static void Call(Type t, string method, params object[] args)
        {
            string line = "call " + t + "::" + method;
            foreach (object a in args)
                line += " " + (a == null ? "null" : a.ToString());
            Console.WriteLine(line);
        }

        internal static void Return(Type t, string method, object value)
        {
            Console.WriteLine("return " + t + "::" + method + " " + (value == null ? "null" : value.ToString()));
        }

        internal static void Throw(Type t, string method, Exception e)
        {
            Console.WriteLine("throw " + t + "::" + method + " " + e.GetType().FullName);
        }

        internal static void Line(string s)
        {
            Console.WriteLine(s);
        }
    }

    public static class Statics
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Nothing()
        {
            Log.Call(typeof(Statics), "Nothing");
            Log.Return(typeof(Statics), "Nothing", "void");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Answer()
        {
            Log.Call(typeof(Statics), "Answer");
            Log.Return(typeof(Statics), "Answer", 42);
            return 42;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Twice(int x)
        {
            Log.Call(typeof(Statics), "Twice", x);
            Log.Return(typeof(Statics), "Twice", 2 * x);
            return 2 * x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static string Join(string a, int b)
        {
            Log.Call(typeof(Statics), "Join", a, b);
            string r = a + "-" + b;
            Log.Return(typeof(Statics), "Join", r);
            return r;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Point Move(Point p, Color c, int by)
        {
            Log.Call(typeof(Statics), "Move", p, c, by);
            Point r = new Point(p.X + by, p.Y + (int)c);
            Log.Return(typeof(Statics), "Move", r);
            return r;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Say(string s, Color c, Point p)
        {
            Log.Call(typeof(Statics), "Say", s, c, p);
            Log.Return(typeof(Statics), "Say", "void");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Twelve(int a1, string a2, long a3, Color a4, Point a5, int a6,
            string a7, bool a8, char a9, byte a10, short a11, int a12)
        {
            Log.Call(typeof(Statics), "Twelve", a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12);
            long r = a1 + a2.Length + a3 + (int)a4 + a5.X + a5.Y + a6 + a7.Length + (a8 ? 1 : 0)
                + a9 + a10 + a11 + a12;
            Log.Return(typeof(Statics), "Twelve", r);
            return r;
        }
    }

    public sealed class Account
    {
        int balance;

        public Account(int balance)
        {
            this.balance = balance;
        }

        public override string ToString()
        {
            return "Account(" + balance + ")";
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public void Deposit(int amount)
        {
            Log.Call(typeof(Account), "Deposit", amount);
            balance += amount;
            Log.Return(typeof(Account), "Deposit", "void");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public int Balance()
        {
            Log.Call(typeof(Account), "Balance");
            Log.Return(typeof(Account), "Balance", balance);
            return balance;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public string Describe(string who, Color c, Point at)
        {
            Log.Call(typeof(Account), "Describe", who, c, at);
            string r = who + ":" + c + ":" + at + ":" + balance;
            Log.Return(typeof(Account), "Describe", r);
            return r;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public int Sum12(int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8,
            int a9, int a10, int a11, string a12)
        {
            Log.Call(typeof(Account), "Sum12", a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12);
            int r = a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12.Length + balance;
            Log.Return(typeof(Account), "Sum12", r);
            return r;
        }
    }

    public static class RefOut
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Swap(ref int a, ref string b)
        {
            Log.Call(typeof(RefOut), "Swap", a, b);
            a = a * 10;
            b = b + "!";
            Log.Return(typeof(RefOut), "Swap", "void");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static bool TryHalf(int x, out int half)
        {
            Log.Call(typeof(RefOut), "TryHalf", x, "(out)");
            half = x / 2;
            bool r = x % 2 == 0;
            Log.Return(typeof(RefOut), "TryHalf", r);
            return r;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Shift(ref Point p, int by)
        {
            Log.Call(typeof(RefOut), "Shift", p, by);
            p.X += by;
            Log.Return(typeof(RefOut), "Shift", p.X);
            return p.X;
        }
    }

    public static class Generics
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static U Id<U>(U x)
        {
            Log.Call(typeof(Generics), "Id", x);
            Log.Return(typeof(Generics), "Id", x);
            return x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static string Pair<U, V>(U u, V v)
        {
            Log.Call(typeof(Generics), "Pair", u, v);
            string r = "<" + u + "," + v + ">";
            Log.Return(typeof(Generics), "Pair", r);
            return r;
        }
    }

    public sealed class Box<T>
    {
        T value;

        public Box(T value)
        {
            this.value = value;
        }

        public override string ToString()
        {
            return "Box(" + value + ")";
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public T Swap(T next)
        {
            Log.Call(typeof(Box<T>), "Swap", next);
            T old = value;
            value = next;
            Log.Return(typeof(Box<T>), "Swap", old);
            return old;
        }
    }

    public struct Cell<T>
    {
        public T Value;
        public int Mutations;

        public override string ToString()
        {
            return "Cell(" + Value + ")";
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public T Set(T v)
        {
            Log.Call(typeof(Cell<T>), "Set", v);
            T old = Value;
            Value = v;
            Log.Return(typeof(Cell<T>), "Set", old);
            return old;
        }
    }

    // StructMutator's target: its hooks add 1 (begin) and 10 (end) to Mutations.
    public struct Counter
    {
        public int Value;
        public int Mutations;

        public override string ToString()
        {
            return "Counter(" + Value + ")";
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public void Bump(int by)
        {
            Log.Call(typeof(Counter), "Bump", by);
            Value += by;
            Log.Return(typeof(Counter), "Bump", "void");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public int Read()
        {
            Log.Call(typeof(Counter), "Read");
            Log.Return(typeof(Counter), "Read", Value);
            return Value;
        }
    }

    public static class Recursion
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Fact(int n)
        {
            Log.Call(typeof(Recursion), "Fact", n);
            int r = n <= 1 ? 1 : n * Fact(n - 1);
            Log.Return(typeof(Recursion), "Fact", r);
            return r;
        }
    }

    public static class Failing
    {
        internal static Exception Thrown;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Outer(int x)
        {
            Log.Call(typeof(Failing), "Outer", x);
            int r = Inner(x + 1) + 1;
            Log.Return(typeof(Failing), "Outer", r);
            return r;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Inner(int x)
        {
            Log.Call(typeof(Failing), "Inner", x);
            if (x > 0)
            {
                Thrown = new InvalidOperationException("inner " + x);
                Log.Throw(typeof(Failing), "Inner", Thrown);
                throw Thrown;
            }
            Log.Return(typeof(Failing), "Inner", x);
            return x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void VoidThrows(string s)
        {
            Log.Call(typeof(Failing), "VoidThrows", s);
            Thrown = new ArgumentException(s);
            Log.Throw(typeof(Failing), "VoidThrows", Thrown);
            throw Thrown;
        }
    }

    public static class Async
    {
        internal static Exception Thrown;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async Task DoneAsync(int x)
        {
            Log.Call(typeof(Async), "DoneAsync", x);
            await Task.CompletedTask;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async Task LaterAsync(int x)
        {
            Log.Call(typeof(Async), "LaterAsync", x);
            await Task.Yield();
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async Task<int> ValueNowAsync(int x)
        {
            Log.Call(typeof(Async), "ValueNowAsync", x);
            await Task.CompletedTask;
            return x + 1;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async Task<int> ValueLaterAsync(int x)
        {
            Log.Call(typeof(Async), "ValueLaterAsync", x);
            await Task.Yield();
            return x + 2;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async Task<int> FaultNowAsync(int x)
        {
            Log.Call(typeof(Async), "FaultNowAsync", x);
            await Task.CompletedTask;
            Thrown = new InvalidOperationException("now " + x);
            throw Thrown;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async Task<int> FaultLaterAsync(int x)
        {
            Log.Call(typeof(Async), "FaultLaterAsync", x);
            await Task.Yield();
            Thrown = new FormatException("later " + x);
            throw Thrown;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async Task FaultVoidLaterAsync(int x)
        {
            Log.Call(typeof(Async), "FaultVoidLaterAsync", x);
            await Task.Yield();
            Thrown = new ArgumentException("void " + x);
            throw Thrown;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async Task<int> CancelNowAsync(CancellationToken token)
        {
            Log.Call(typeof(Async), "CancelNowAsync", token.IsCancellationRequested);
            await Task.CompletedTask;
            try
            {
                token.ThrowIfCancellationRequested();
            }
            catch (OperationCanceledException e)
            {
                Thrown = e;
                throw;
            }
            return 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async Task<int> CancelLaterAsync(CancellationToken token)
        {
            Log.Call(typeof(Async), "CancelLaterAsync", token.IsCancellationRequested);
            await Task.Yield();
            try
            {
                token.ThrowIfCancellationRequested();
            }
            catch (OperationCanceledException e)
            {
                Thrown = e;
                throw;
            }
            return 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async ValueTask<int> VtNowAsync(int x)
        {
            Log.Call(typeof(Async), "VtNowAsync", x);
            await Task.CompletedTask;
            return x + 3;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async ValueTask<int> VtLaterAsync(int x)
        {
            Log.Call(typeof(Async), "VtLaterAsync", x);
            await Task.Yield();
            return x + 4;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async ValueTask<int> VtFaultAsync(int x)
        {
            Log.Call(typeof(Async), "VtFaultAsync", x);
            await Task.Yield();
            Thrown = new NotSupportedException("vt " + x);
            throw Thrown;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async ValueTask<int> VtCancelAsync(CancellationToken token)
        {
            Log.Call(typeof(Async), "VtCancelAsync", token.IsCancellationRequested);
            await Task.Yield();
            try
            {
                token.ThrowIfCancellationRequested();
            }
            catch (OperationCanceledException e)
            {
                Thrown = e;
                throw;
            }
            return 0;
        }

        // Not async: a ValueTask<int> over a result (no task at all).
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static ValueTask<int> VtPlain(int x)
        {
            Log.Call(typeof(Async), "VtPlain", x);
            Log.Return(typeof(Async), "VtPlain", x + 5);
            return new ValueTask<int>(x + 5);
        }
    }

    // The targets the 8 threads call: no output.
    public static class Shared
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Work(int thread, int i)
        {
            return thread * 1000 + Square(i);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Square(int i)
        {
            return i * i;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Touch(ref long sum, string s)
        {
            sum += s.Length;
        }
    }

    static class Program
    {
        const int Threads = 8;
        const int PerThread = 100;

        static int Main(string[] args)
        {
            if (args.Length > 0 && args[0] == "selftest")
                return SelfTest.Run();
            StaticsSection();
            InstancesSection();
            RefOutSection();
            GenericsSection();
            StructsSection();
            RecursionSection();
            ExceptionsSection();
            AsyncSection().GetAwaiter().GetResult();
            if (!ThreadsSection())
                return 99;
            Log.Line("done");
            return 50;
        }

        static void StaticsSection()
        {
            Log.Line("== statics");
            Statics.Nothing();
            Log.Line("got " + Statics.Answer());
            Log.Line("got " + Statics.Twice(21));
            Log.Line("got " + Statics.Join("ab", 7));
            Log.Line("got " + Statics.Move(new Point(1, 2), Color.Blue, 3));
            Statics.Say("hello", Color.Green, new Point(-1, 5));
            Log.Line("got " + Statics.Twelve(1, "two", 3000000000L, Color.Blue, new Point(5, 6), 7,
                "eight", true, 'x', 10, -11, 12));
        }

        static void InstancesSection()
        {
            Log.Line("== instances");
            Account a = new Account(100);
            a.Deposit(23);
            Log.Line("got " + a.Balance());
            Log.Line("got " + a.Describe("ann", Color.Red, new Point(3, 4)));
            Log.Line("got " + a.Sum12(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, "twelve"));
        }

        static void RefOutSection()
        {
            Log.Line("== refout");
            int n = 4;
            string s = "hi";
            RefOut.Swap(ref n, ref s);
            Log.Line("after " + n + " " + s);
            int half = -1;
            Log.Line("out-before " + half);
            bool even = RefOut.TryHalf(10, out half);
            Log.Line("got " + even + " " + half);
            half = -2;
            Log.Line("out-before " + half);
            even = RefOut.TryHalf(7, out half);
            Log.Line("got " + even + " " + half);
            Point p = new Point(1, 1);
            Log.Line("got " + RefOut.Shift(ref p, 9));
            Log.Line("after " + p);
        }

        static void GenericsSection()
        {
            Log.Line("== generics");
            Log.Line("got " + Generics.Id(5));
            Log.Line("got " + Generics.Id("five"));
            Log.Line("got " + Generics.Pair(1, "one"));
            Log.Line("got " + Generics.Pair("two", Color.Green));
            Box<int> bi = new Box<int>(1);
            Log.Line("got " + bi.Swap(2));
            Log.Line("after " + bi);
            Box<string> bs = new Box<string>("a");
            Log.Line("got " + bs.Swap("b"));
            Log.Line("after " + bs);
            Cell<int> ci = new Cell<int>();
            Log.Line("got " + ci.Set(8));
            Log.Line("after " + ci + " mutations " + ci.Mutations);
            Cell<string> cs = new Cell<string>();
            Log.Line("got " + (cs.Set("x") ?? "null"));
            Log.Line("after " + cs + " mutations " + cs.Mutations);
        }

        static void StructsSection()
        {
            Log.Line("== structs");
            Counter c = new Counter();
            c.Bump(5);
            Log.Line("after value " + c.Value + " mutations " + c.Mutations);
            Log.Line("got " + c.Read());
            Log.Line("after value " + c.Value + " mutations " + c.Mutations);
            Counter[] array = new Counter[1];
            array[0].Bump(7);
            Log.Line("after array value " + array[0].Value + " mutations " + array[0].Mutations);
        }

        static void RecursionSection()
        {
            Log.Line("== recursion");
            Log.Line("got " + Recursion.Fact(4));
        }

        static void ExceptionsSection()
        {
            Log.Line("== exceptions");
            try
            {
                Log.Line("got " + Failing.Outer(-5));
                Log.Line("got " + Failing.Outer(1));
            }
            catch (InvalidOperationException e)
            {
                Log.Line("caught " + e.GetType().FullName + " " + e.Message.Replace(' ', '_')
                    + " same " + ReferenceEquals(e, Failing.Thrown));
            }
            try
            {
                Failing.VoidThrows("bad");
            }
            catch (ArgumentException e)
            {
                Log.Line("caught " + e.GetType().FullName + " " + e.Message.Replace(' ', '_')
                    + " same " + ReferenceEquals(e, Failing.Thrown));
            }
        }

        static string Caught(Exception e)
        {
            return "caught " + e.GetType().FullName + " same " + ReferenceEquals(e, Async.Thrown);
        }

        static async Task AsyncSection()
        {
            Log.Line("== async");
            Task t = Async.DoneAsync(1);
            Log.Line("status " + t.Status);
            await t;
            Log.Line("awaited DoneAsync");
            await Async.LaterAsync(2);
            Log.Line("awaited LaterAsync");
            Task<int> ti = Async.ValueNowAsync(3);
            Log.Line("status " + ti.Status);
            Log.Line("awaited " + await ti);
            Log.Line("awaited " + await Async.ValueLaterAsync(4));
            ti = Async.FaultNowAsync(5);
            Log.Line("status " + ti.Status);
            try
            {
                await ti;
            }
            catch (InvalidOperationException e)
            {
                Log.Line(Caught(e));
            }
            try
            {
                await Async.FaultLaterAsync(6);
            }
            catch (FormatException e)
            {
                Log.Line(Caught(e));
            }
            try
            {
                await Async.FaultVoidLaterAsync(7);
            }
            catch (ArgumentException e)
            {
                Log.Line(Caught(e));
            }
            using (CancellationTokenSource cts = new CancellationTokenSource())
            {
                cts.Cancel();
                ti = Async.CancelNowAsync(cts.Token);
                Log.Line("status " + ti.Status);
                try
                {
                    await ti;
                }
                catch (OperationCanceledException e)
                {
                    Log.Line(Caught(e) + " token " + (e.CancellationToken == cts.Token));
                }
                ti = Async.CancelLaterAsync(cts.Token);
                try
                {
                    await ti;
                }
                catch (OperationCanceledException e)
                {
                    Log.Line(Caught(e) + " token " + (e.CancellationToken == cts.Token));
                }
                Log.Line("status " + ti.Status);
                ValueTask<int> vt = Async.VtNowAsync(8);
                Log.Line("completed " + vt.IsCompletedSuccessfully);
                Log.Line("awaited " + await vt);
                Log.Line("awaited " + await Async.VtLaterAsync(9));
                Log.Line("awaited " + await Async.VtPlain(10));
                try
                {
                    await Async.VtFaultAsync(11);
                }
                catch (NotSupportedException e)
                {
                    Log.Line(Caught(e));
                }
                try
                {
                    await Async.VtCancelAsync(cts.Token);
                }
                catch (OperationCanceledException e)
                {
                    Log.Line(Caught(e) + " token " + (e.CancellationToken == cts.Token));
                }
            }
        }

        // False (exit 99) when a thread's sum is not the formula's.
        static bool ThreadsSection()
        {
            Log.Line("== threads");
            long[] sums = new long[Threads];
            Thread[] threads = new Thread[Threads];
            using (Barrier barrier = new Barrier(Threads))
            {
                for (int t = 0; t < Threads; t++)
                {
                    int k = t;
                    threads[t] = new Thread(() =>
                    {
                        barrier.SignalAndWait();
                        long sum = 0;
                        for (int i = 0; i < PerThread; i++)
                        {
                            sum += Shared.Work(k, i);
                            Shared.Touch(ref sum, "abc");
                        }
                        sums[k] = sum;
                    });
                    threads[t].Start();
                }
                foreach (Thread th in threads)
                    th.Join();
            }
            // Thread k: 1000 k PerThread + the squares of 0 .. PerThread - 1 + 3 PerThread
            // (k * 100000 + 328650 with PerThread = 100).
            bool ok = true;
            for (int t = 0; t < Threads; t++)
            {
                long squares = (long)(PerThread - 1) * PerThread * (2 * PerThread - 1) / 6;
                ok &= sums[t] == 1000L * t * PerThread + squares + 3 * PerThread;
                Log.Line("thread " + t + " sum " + sums[t]);
            }
            Log.Line("calls Shared " + Threads * PerThread * 3);
            return ok;
        }
    }

    // The self-test of ILRewrite.CallTarget's AsyncEnd: every outcome of Task, Task<T>,
    // ValueTask and ValueTask<T>, already complete and pending, compared with what the
    // original task gives (`await`, status, exception objects, cancellation token), the
    // handler's calls (exactly one, with the result or the exception `await` throws,
    // before the returned task completes), a handler that throws, and the dispatch on
    // the return type (ContinueAny).
    static class SelfTest
    {
        static int checks;
        static int failures;

        static void Check(bool ok, string what)
        {
            checks++;
            if (!ok)
            {
                failures++;
                Console.WriteLine("selftest FAIL " + what);
            }
        }

        sealed class Handler : AsyncEndHandler
        {
            internal int Calls;
            internal object Result;
            internal Exception Exception;
            internal CallTargetState State;
            internal Type ResultType;
            internal bool Throws;

            public override void OnAsyncEnd<TResult>(TResult result, Exception exception, CallTargetState state)
            {
                Calls++;
                Result = result;
                Exception = exception;
                State = state;
                ResultType = typeof(TResult);
                if (Throws)
                    throw new InvalidOperationException("handler");
            }
        }

        // A ValueTask<int> source whose GetResult may be called once only (as a pooled
        // source's): a second call is a failure.
        sealed class OneShot : IValueTaskSource<int>
        {
            internal int GetResults;
            int result;
            bool done;
            Action<object> continuation;
            object continuationState;

            internal OneShot(bool done, int result)
            {
                this.done = done;
                this.result = result;
            }

            internal void Complete(int value)
            {
                result = value;
                done = true;
                Action<object> c = continuation;
                continuation = null;
                if (c != null)
                    c(continuationState);
            }

            public ValueTaskSourceStatus GetStatus(short token)
            {
                return done ? ValueTaskSourceStatus.Succeeded : ValueTaskSourceStatus.Pending;
            }

            public void OnCompleted(Action<object> c, object state, short token, ValueTaskSourceOnCompletedFlags flags)
            {
                if (done)
                {
                    c(state);
                    return;
                }
                continuation = c;
                continuationState = state;
            }

            public int GetResult(short token)
            {
                GetResults++;
                if (GetResults > 1)
                    throw new InvalidOperationException("GetResult called twice");
                return result;
            }
        }

        static readonly CallTargetState State = new CallTargetState("state", 42);

        static bool StateOk(Handler h)
        {
            return ReferenceEquals(h.State.State, "state") && h.State.Data == 42;
        }

        // What `await` of a task throws (null if nothing).
        static Exception Awaited(Task t)
        {
            try
            {
                t.GetAwaiter().GetResult();
                return null;
            }
            catch (Exception e)
            {
                return e;
            }
        }

        static async Task<int> ThrowLater(Task gate, Exception e)
        {
            await gate;
            throw e;
        }

        static async Task<int> CancelLater(Task gate, CancellationToken token)
        {
            await gate;
            token.ThrowIfCancellationRequested();
            return 0;
        }

        static async Task<int> ResultLater(Task gate, int x)
        {
            await gate;
            return x;
        }

        internal static int Run()
        {
            Completed();
            PendingSuccess();
            PendingFaults();
            Cancellation();
            NonGeneric();
            HandlerThrows();
            ValueTasks();
            Dispatch();
            if (failures > 0)
            {
                Console.WriteLine("selftest failures " + failures + " of " + checks);
                return 99;
            }
            Console.WriteLine("selftest ok " + checks);
            return 0;
        }

        static void Completed()
        {
            Handler h = new Handler();
            Task<int> t = Task.FromResult(5);
            Task<int> w = AsyncEnd.Continue(t, State, h);
            Check(ReferenceEquals(w, t), "completed: the same task");
            Check(h.Calls == 1 && (int)h.Result == 5 && h.Exception == null && StateOk(h)
                && h.ResultType == typeof(int), "completed: handler (5, null, state)");

            h = new Handler();
            Exception e = new FormatException("x");
            t = Task.FromException<int>(e);
            w = AsyncEnd.Continue(t, State, h);
            Check(ReferenceEquals(w, t), "completed faulted: the same task");
            Check(h.Calls == 1 && ReferenceEquals(h.Exception, e) && (int)h.Result == 0,
                "completed faulted: handler gets the exception");
            Check(ReferenceEquals(Awaited(w), e), "completed faulted: await throws it");

            h = new Handler();
            using (CancellationTokenSource cts = new CancellationTokenSource())
            {
                cts.Cancel();
                t = Task.FromCanceled<int>(cts.Token);
                w = AsyncEnd.Continue(t, State, h);
                Check(ReferenceEquals(w, t), "completed cancelled: the same task");
                Check(h.Calls == 1 && h.Exception is TaskCanceledException
                    && ((OperationCanceledException)h.Exception).CancellationToken == cts.Token,
                    "completed cancelled: handler gets a TaskCanceledException with the token");
            }

            h = new Handler();
            Check(AsyncEnd.Continue((Task<int>)null, State, h) == null && h.Calls == 1
                && h.Exception == null, "null task: null back, handler once");
        }

        static void PendingSuccess()
        {
            Handler h = new Handler();
            TaskCompletionSource<int> tcs = new TaskCompletionSource<int>();
            Task<int> w = AsyncEnd.Continue(tcs.Task, State, h);
            Check(!ReferenceEquals(w, tcs.Task) && !w.IsCompleted && h.Calls == 0,
                "pending: not complete, handler not called");
            int seen = -1;
            w.ContinueWith(_ => seen = h.Calls, TaskContinuationOptions.ExecuteSynchronously);
            tcs.SetResult(7);
            Check(w.Result == 7 && w.Status == TaskStatus.RanToCompletion, "pending: result 7");
            Check(h.Calls == 1 && (int)h.Result == 7 && h.Exception == null && StateOk(h),
                "pending: handler (7, null, state)");
            Check(seen == 1, "pending: the handler ran before the caller's continuation");

            // Completed on another thread, awaited here.
            TaskCompletionSource<bool> gate = new TaskCompletionSource<bool>();
            h = new Handler();
            w = AsyncEnd.Continue(ResultLater(gate.Task, 9), State, h);
            Task.Run(() => gate.SetResult(true));
            Check(w.GetAwaiter().GetResult() == 9 && h.Calls == 1 && (int)h.Result == 9,
                "pending, completed on the pool: 9");
        }

        static void PendingFaults()
        {
            // One exception, thrown by an async method: the same object, its stack trace
            // from where it was thrown, none of AsyncEnd's frames.
            TaskCompletionSource<bool> gate = new TaskCompletionSource<bool>();
            Exception e = new FormatException("later");
            Handler h = new Handler();
            Task<int> original = ThrowLater(gate.Task, e);
            Task<int> w = AsyncEnd.Continue(original, State, h);
            gate.SetResult(true);
            Exception got = Awaited(w);
            Check(w.IsFaulted && ReferenceEquals(got, e), "pending faulted: await throws the same object");
            Check(h.Calls == 1 && ReferenceEquals(h.Exception, e), "pending faulted: handler gets it");
            Check(w.Exception.InnerExceptions.Count == 1 && ReferenceEquals(w.Exception.InnerExceptions[0], e),
                "pending faulted: Exception.InnerExceptions");
            string trace = got.StackTrace ?? "";
            Check(trace.Contains("ThrowLater") && !trace.Contains("ILRewrite.CallTarget"),
                "pending faulted: stack trace from the throw, without AsyncEnd");
            Check(ReferenceEquals(Awaited(original), e), "pending faulted: the original still the same");

            // Several exceptions (a WhenAll-like task): all kept, in order; await the first.
            h = new Handler();
            TaskCompletionSource<int> tcs = new TaskCompletionSource<int>();
            w = AsyncEnd.Continue(tcs.Task, State, h);
            Exception e1 = new ArgumentException("one");
            Exception e2 = new NotSupportedException("two");
            tcs.SetException(new Exception[] { e1, e2 });
            Check(w.IsFaulted && w.Exception.InnerExceptions.Count == 2
                && ReferenceEquals(w.Exception.InnerExceptions[0], e1)
                && ReferenceEquals(w.Exception.InnerExceptions[1], e2),
                "pending, two exceptions: both, in order");
            Check(ReferenceEquals(Awaited(w), e1) && ReferenceEquals(h.Exception, e1),
                "pending, two exceptions: await and handler get the first");
            try
            {
                int unused = w.Result;
                Check(false, "pending, two exceptions: Result throws");
            }
            catch (AggregateException a)
            {
                Check(a.InnerExceptions.Count == 2 && ReferenceEquals(a.InnerExceptions[0], e1),
                    "pending, two exceptions: Result throws an AggregateException over both");
            }

            // Faulted (not cancelled) with an OperationCanceledException: stays faulted.
            h = new Handler();
            tcs = new TaskCompletionSource<int>();
            w = AsyncEnd.Continue(tcs.Task, State, h);
            OperationCanceledException oce = new OperationCanceledException("faulted");
            tcs.SetException(oce);
            Check(w.IsFaulted && !w.IsCanceled && ReferenceEquals(Awaited(w), oce)
                && ReferenceEquals(h.Exception, oce), "pending, faulted with an OperationCanceledException: faulted");
        }

        static void Cancellation()
        {
            using (CancellationTokenSource cts = new CancellationTokenSource())
            {
                // An async method cancelled by a thrown OperationCanceledException: the
                // same object from await, the same token.
                TaskCompletionSource<bool> gate = new TaskCompletionSource<bool>();
                Handler h = new Handler();
                Task<int> original = CancelLater(gate.Task, cts.Token);
                Task<int> w = AsyncEnd.Continue(original, State, h);
                cts.Cancel();
                gate.SetResult(true);
                Exception fromOriginal = Awaited(original);
                Exception fromWrapper = Awaited(w);
                Check(original.IsCanceled && w.IsCanceled, "pending cancelled: cancelled");
                Check(fromOriginal is OperationCanceledException && ReferenceEquals(fromWrapper, fromOriginal),
                    "pending cancelled: await throws the same OperationCanceledException");
                Check(((OperationCanceledException)fromWrapper).CancellationToken == cts.Token,
                    "pending cancelled: the same token");
                Check(h.Calls == 1 && ReferenceEquals(h.Exception, fromOriginal),
                    "pending cancelled: handler gets it");
                try
                {
                    w.Wait();
                    Check(false, "pending cancelled: Wait throws");
                }
                catch (AggregateException a)
                {
                    Check(a.InnerExceptions.Count == 1 && a.InnerExceptions[0] is TaskCanceledException,
                        "pending cancelled: Wait throws AggregateException(TaskCanceledException)");
                }

                // A TaskCompletionSource cancelled with a token.
                h = new Handler();
                TaskCompletionSource<int> tcs = new TaskCompletionSource<int>();
                w = AsyncEnd.Continue(tcs.Task, State, h);
                tcs.SetCanceled();
                Exception got = Awaited(w);
                Check(w.IsCanceled && got is TaskCanceledException && h.Exception is TaskCanceledException,
                    "pending SetCanceled: cancelled, TaskCanceledException");
            }
        }

        static void NonGeneric()
        {
            Handler h = new Handler();
            Task done = Task.CompletedTask;
            Check(ReferenceEquals(AsyncEnd.Continue(done, State, h), done) && h.Calls == 1
                && h.Result == null && h.ResultType == typeof(object) && h.Exception == null,
                "Task completed: same task, handler (object null)");

            h = new Handler();
            TaskCompletionSource<bool> gate = new TaskCompletionSource<bool>();
            Exception e = new FormatException("ng");
            Task original = ThrowLater(gate.Task, e);
            Task w = AsyncEnd.Continue(original, State, h);
            Check(h.Calls == 0 && !w.IsCompleted, "Task pending: not complete");
            gate.SetResult(true);
            Check(w.IsFaulted && ReferenceEquals(Awaited(w), e) && h.Calls == 1 && ReferenceEquals(h.Exception, e),
                "Task pending faulted: same exception");

            h = new Handler();
            TaskCompletionSource<int> tcs = new TaskCompletionSource<int>();
            w = AsyncEnd.Continue((Task)tcs.Task, State, h);
            tcs.SetResult(3);
            Check(w.Status == TaskStatus.RanToCompletion && h.Calls == 1 && h.Result == null
                && h.ResultType == typeof(object), "Task pending success: handler (object null)");
        }

        static void HandlerThrows()
        {
            Handler h = new Handler();
            h.Throws = true;
            TaskCompletionSource<int> tcs = new TaskCompletionSource<int>();
            Task<int> w = AsyncEnd.Continue(tcs.Task, State, h);
            tcs.SetResult(11);
            Check(w.Status == TaskStatus.RanToCompletion && w.Result == 11 && h.Calls == 1,
                "handler throws, pending: result unchanged");

            h = new Handler();
            h.Throws = true;
            Exception e = new FormatException("kept");
            tcs = new TaskCompletionSource<int>();
            w = AsyncEnd.Continue(tcs.Task, State, h);
            tcs.SetException(e);
            Check(ReferenceEquals(Awaited(w), e) && h.Calls == 1, "handler throws, pending faulted: the target's exception");

            h = new Handler();
            h.Throws = true;
            Task<int> t = Task.FromResult(12);
            bool threw = false;
            try
            {
                w = AsyncEnd.Continue(t, State, h);
            }
            catch (Exception)
            {
                threw = true;
            }
            Check(!threw && ReferenceEquals(w, t) && h.Calls == 1, "handler throws, completed: nothing thrown");

            h = new Handler();
            h.Throws = true;
            ValueTask<int> vt = AsyncEnd.Continue(new ValueTask<int>(13), State, h);
            Check(vt.Result == 13 && h.Calls == 1, "handler throws, ValueTask: result unchanged");
        }

        static void ValueTasks()
        {
            Handler h = new Handler();
            ValueTask<int> vt = AsyncEnd.Continue(new ValueTask<int>(4), State, h);
            Check(vt.IsCompletedSuccessfully && vt.Result == 4 && h.Calls == 1 && (int)h.Result == 4
                && StateOk(h), "ValueTask result: 4");

            h = new Handler();
            TaskCompletionSource<int> tcs = new TaskCompletionSource<int>();
            vt = AsyncEnd.Continue(new ValueTask<int>(tcs.Task), State, h);
            Check(!vt.IsCompleted && h.Calls == 0, "ValueTask over a pending task: pending");
            tcs.SetResult(6);
            Check(vt.IsCompletedSuccessfully && vt.Result == 6 && h.Calls == 1 && (int)h.Result == 6,
                "ValueTask over a pending task: 6");

            h = new Handler();
            Exception e = new NotSupportedException("vt");
            tcs = new TaskCompletionSource<int>();
            vt = AsyncEnd.Continue(new ValueTask<int>(tcs.Task), State, h);
            tcs.SetException(e);
            Check(vt.IsFaulted && ReferenceEquals(Awaited(vt.AsTask()), e) && ReferenceEquals(h.Exception, e),
                "ValueTask faulted: the same exception");

            h = new Handler();
            vt = AsyncEnd.Continue(new ValueTask<int>(Task.FromException<int>(e)), State, h);
            Check(vt.IsFaulted && ReferenceEquals(Awaited(vt.AsTask()), e) && h.Calls == 1,
                "ValueTask completed faulted: the same exception");

            using (CancellationTokenSource cts = new CancellationTokenSource())
            {
                TaskCompletionSource<bool> gate = new TaskCompletionSource<bool>();
                h = new Handler();
                Task<int> original = CancelLater(gate.Task, cts.Token);
                vt = AsyncEnd.Continue(new ValueTask<int>(original), State, h);
                cts.Cancel();
                gate.SetResult(true);
                Exception got = Awaited(vt.AsTask());
                Check(vt.IsCanceled && ReferenceEquals(got, Awaited(original)) && ReferenceEquals(h.Exception, got),
                    "ValueTask cancelled: the same OperationCanceledException");
            }

            // Over an IValueTaskSource: its GetResult called exactly once in all.
            OneShot source = new OneShot(true, 21);
            h = new Handler();
            vt = AsyncEnd.Continue(new ValueTask<int>(source, 0), State, h);
            Check(vt.Result == 21 && source.GetResults == 1 && h.Calls == 1 && (int)h.Result == 21,
                "ValueTask over a completed source: consumed once");
            source = new OneShot(false, 0);
            h = new Handler();
            vt = AsyncEnd.Continue(new ValueTask<int>(source, 0), State, h);
            Check(!vt.IsCompleted && h.Calls == 0, "ValueTask over a pending source: pending");
            source.Complete(22);
            Check(vt.IsCompletedSuccessfully && vt.Result == 22 && source.GetResults == 1 && h.Calls == 1,
                "ValueTask over a pending source: 22, consumed once");

            // ValueTask.
            h = new Handler();
            ValueTask v = AsyncEnd.Continue(default(ValueTask), State, h);
            Check(v.IsCompletedSuccessfully && h.Calls == 1 && h.ResultType == typeof(object),
                "ValueTask (non-generic) completed");
            h = new Handler();
            TaskCompletionSource<bool> pending = new TaskCompletionSource<bool>();
            v = AsyncEnd.Continue(new ValueTask(pending.Task), State, h);
            Check(!v.IsCompleted && h.Calls == 0, "ValueTask (non-generic) pending");
            pending.SetException(e);
            Check(v.IsFaulted && ReferenceEquals(Awaited(v.AsTask()), e) && ReferenceEquals(h.Exception, e),
                "ValueTask (non-generic) faulted: the same exception");
        }

        static void Dispatch()
        {
            Check(!AsyncEnd.IsTaskLike<int>() && !AsyncEnd.IsTaskLike<string>() && !AsyncEnd.IsTaskLike<object>(),
                "IsTaskLike: int, string, object are not");
            Check(AsyncEnd.IsTaskLike<Task>() && AsyncEnd.IsTaskLike<Task<int>>() && AsyncEnd.IsTaskLike<Task<string>>()
                && AsyncEnd.IsTaskLike<ValueTask>() && AsyncEnd.IsTaskLike<ValueTask<int>>()
                && AsyncEnd.IsTaskLike<ValueTask<string>>(), "IsTaskLike: the four task types are");
            Handler h = new Handler();
            Check(AsyncEnd.ContinueAny(5, State, h) == 5 && AsyncEnd.ContinueAny("s", State, h) == "s" && h.Calls == 0,
                "ContinueAny: other types as they are, handler not called");

            TaskCompletionSource<string> tcs = new TaskCompletionSource<string>();
            Task<string> w = AsyncEnd.ContinueAny(tcs.Task, State, h);
            Check(!ReferenceEquals(w, tcs.Task) && h.Calls == 0, "ContinueAny Task<string>: continued");
            tcs.SetResult("r");
            Check(w.Result == "r" && h.Calls == 1 && (string)h.Result == "r" && h.ResultType == typeof(string),
                "ContinueAny Task<string>: handler gets the string");

            h = new Handler();
            ValueTask<long> vl = AsyncEnd.ContinueAny(new ValueTask<long>(8L), State, h);
            Check(vl.Result == 8L && h.Calls == 1 && (long)h.Result == 8L && h.ResultType == typeof(long),
                "ContinueAny ValueTask<long>");

            h = new Handler();
            Task t = AsyncEnd.ContinueAny(Task.CompletedTask, State, h);
            Check(t.IsCompleted && h.Calls == 1 && h.ResultType == typeof(object), "ContinueAny Task");

            h = new Handler();
            ValueTask v = AsyncEnd.ContinueAny(default(ValueTask), State, h);
            Check(v.IsCompletedSuccessfully && h.Calls == 1, "ContinueAny ValueTask");
        }
    }
}
