// Calls of named targets, counted by the sample profiler's `calls` with ReadyToRun
// kept (tests/clr_targets.rs). Every counted call is made between Window.Open and
// Window.Close on the main thread, so the counts are exact: N calls of each target
// (2N of string.IsNullOrEmpty, which Path.Combine calls twice, inlined into
// precompiled framework code; 2N of Gen.Id, over a value and a reference type).
// Stack<T> lives in System.Collections.dll, loaded only when this program needs it:
// its first call after its module's load is counted too. Exit code 30.
using System;
using System.Collections.Generic;
using System.IO;
using System.Runtime.CompilerServices;
using System.Text;

namespace Production
{
    static class Window
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Open() { }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Close() { }
    }

    static class Gen
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static T Id<T>(T value) { return value; }
    }

    class Box<T>
    {
        T value;
        public Box(T value) { this.value = value; }
        public T Get() { return value; }
    }

    static class Late
    {
        // In its own method, so that System.Collections loads when this one compiles,
        // inside the window.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Push(int n)
        {
            var stack = new Stack<int>(n);
            for (int i = 0; i < n; i++)
                stack.Push(i);
            return stack.Count;
        }
    }

    static class Program
    {
        static int Main(string[] args)
        {
            int n = args.Length > 0 ? int.Parse(args[0]) : 1000;
            var names = new Dictionary<string, int>();
            names["a"] = 1;
            var numbers = new Dictionary<int, int>();
            numbers[1] = 2;
            var list = new List<int>(n);
            var text = new StringBuilder(4 * n + 16);
            var boxed = new Box<int>(3);
            var boxedText = new Box<string>("b");
            string left = args.Length > 1 ? args[1] : "l", right = "r";
            long sum = 0;
            int value;
            Window.Open();
            sum += Late.Push(n);
            for (int i = 0; i < n; i++)
            {
                if (names.TryGetValue("a", out value)) sum += value;
                if (numbers.TryGetValue(1, out value)) sum += value;
                sum += string.Concat(left, right).Length;
                list.Add(i);
                text.Append("x");
                sum += Gen.Id(i) + Gen.Id("s").Length;
                sum += boxed.Get() + boxedText.Get().Length;
                sum += Path.Combine("a", "b").Length;
            }
            Window.Close();
            Console.WriteLine("sum " + sum + " list " + list.Count + " text " + text.Length);
            return 30;
        }
    }
}
