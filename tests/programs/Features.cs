// Features.exe: most C# features whose IL a rewriter must survive, one printed section
// each. Single-threaded apart from the thread-pool continuations of the async section,
// whose results are only printed after they are awaited. Exit code 11.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug- -unsafe -r:System.dll -r:System.Core.dll
using System;
using System.Collections.Generic;
using System.Linq;
using System.Reflection;
using System.Text;
using System.Text.RegularExpressions;
using System.Threading.Tasks;

namespace Features
{
    // 8 bytes: returned in a register.
    struct Small
    {
        public int X;
        public int Y;
        public Small(int x, int y) { X = x; Y = y; }
        public override string ToString() { return "(" + X + "," + Y + ")"; }
    }

    // 40 bytes: returned through a hidden return buffer.
    struct Big
    {
        public long A, B, C, D, E;
        public long Sum() { return A + B + C + D + E; }
        public override string ToString() { return "[" + A + " " + B + " " + C + " " + D + " " + E + "]"; }
    }

    // A struct holding a reference: GC-tracked fields in a value type.
    struct Named
    {
        public string Name;
        public long Id;
        public Named(string name, long id) { Name = name; Id = id; }
    }

    class Box<T>
    {
        public readonly T Value;
        public Box(T value) { Value = value; }
        public Box<U> Map<U>(Func<T, U> f) { return new Box<U>(f(Value)); }
        public override string ToString() { return "Box<" + typeof(T).Name + ">(" + Value + ")"; }
    }

    struct Pair<A, B>
    {
        public A First;
        public B Second;
        public Pair(A a, B b) { First = a; Second = b; }
        public Pair<B, A> Swap() { return new Pair<B, A>(Second, First); }
        public override string ToString() { return "<" + First + "|" + Second + ">"; }
    }

    // A static field per instantiation: a generic dictionary lookup for shared code.
    static class PerType<T>
    {
        public static int Count;
        public static void Hit() { Count++; }
    }

    class Shape
    {
        // A generic virtual method.
        public virtual string Show<T>(T x) { return "shape " + x; }
    }

    class Circle : Shape
    {
        public override string Show<T>(T x) { return "circle " + typeof(T).Name + " " + x; }
    }

    class CodeException : Exception
    {
        public readonly int Code;
        public CodeException(int code) : base("code " + code) { Code = code; }
    }

    class Broken
    {
        public static readonly int Value = Fail();
        static int Fail() { throw new InvalidOperationException("cctor failed"); }
    }

    static class Program
    {
        static int Main()
        {
            Linq();
            Regexes();
            Async();
            Iterators();
            Filters();
            NestedHandlers();
            Generics();
            Structs();
            Switches();
            Recursion();
            Localloc();
            CrossFrame();
            Console.WriteLine("done");
            return 11;
        }

        static void Section(string name) { Console.WriteLine("== " + name); }

        // ---- LINQ ------------------------------------------------------------------

        static void Linq()
        {
            Section("linq");
            List<int> nums = Enumerable.Range(1, 20).ToList();
            Console.WriteLine("squares " + string.Join(",", nums.Where(n => n % 2 == 0).Select(n => n * n)));
            Console.WriteLine("groups " + string.Join(",", nums.GroupBy(n => n % 3).Select(g => g.Key + ":" + g.Sum())));
            string[] words = { "pear", "apple", "fig", "banana", "kiwi", "cherry", "date" };
            Console.WriteLine("ordered " + string.Join(",", words.OrderBy(w => w.Length).ThenBy(w => w, StringComparer.Ordinal)));
            Console.WriteLine("letters " + words.Aggregate(0, (acc, w) => acc + w.Length));
            var joined = from w in words
                         join n in nums on w.Length equals n
                         where n > 3
                         select w + "=" + n;
            Console.WriteLine("join " + string.Join(",", joined));
            Console.WriteLine("flat " + string.Join("", words.Take(3).SelectMany(w => w.Take(2))));
            Console.WriteLine("distinct " + string.Join(",", words.Select(w => w.Length).Distinct().OrderByDescending(n => n)));
            Console.WriteLine("zip " + string.Join(",", words.Zip(nums, (w, n) => w[0] + n.ToString())));
            Console.WriteLine("any " + nums.Any(n => n > 19) + " all " + nums.All(n => n > 1) + " count " + nums.Count(n => n % 5 == 0));
            Dictionary<char, int> byFirst = words.ToDictionary(w => w[0], w => w.Length);
            Console.WriteLine("dict " + string.Join(",", byFirst.OrderBy(kv => kv.Key).Select(kv => kv.Key + "" + kv.Value)));
            int captured = 7;
            Func<int, int> addCaptured = x => x + captured;
            captured = 8;
            Console.WriteLine("closure " + addCaptured(1));
        }

        // ---- Regex -----------------------------------------------------------------

        static void Regexes()
        {
            Section("regex");
            var pairs = new Regex(@"(?<key>\w+)=(?<val>\d+)");
            foreach (Match m in pairs.Matches("a=1, bb=22, ccc=333"))
                Console.WriteLine("pair " + m.Groups["key"].Value + " " + m.Groups["val"].Value + " at " + m.Index);
            Console.WriteLine("replace " + Regex.Replace("2024-01-15", @"(\d+)-(\d+)-(\d+)", "$3/$2/$1"));
            Console.WriteLine("split " + string.Join("|", Regex.Split("one, two;three  four", @"[,;\s]+")));
            Console.WriteLine("evaluator " + Regex.Replace("a1b22c333", @"\d+", m => (int.Parse(m.Value) * 2).ToString()));
            var compiled = new Regex(@"^[a-z]+\d*$", RegexOptions.Compiled | RegexOptions.IgnoreCase);
            foreach (string s in new[] { "abc", "ABC123", "12abc", "x9", "" })
                Console.WriteLine("compiled '" + s + "' " + compiled.IsMatch(s));
            Console.WriteLine("backref " + Regex.IsMatch("hello hello world", @"\b(\w+) \1\b"));
        }

        // ---- async/await -----------------------------------------------------------

        static async Task<int> Leaf(int x)
        {
            await Task.Delay(1);
            return x * 2;
        }

        static async Task<int> Middle(int x)
        {
            await Task.Yield();
            int a = await Leaf(x);
            int b = await Leaf(x + 1);
            return a + b;
        }

        static async Task<string> FanOut()
        {
            var tasks = new List<Task<int>>();
            for (int i = 0; i < 6; i++)
                tasks.Add(Middle(i));
            int[] results = await Task.WhenAll(tasks);
            return string.Join(",", results);
        }

        static async Task<int> ThrowsLater(string message)
        {
            await Task.Delay(1);
            throw new InvalidOperationException(message);
        }

        static async Task<string> CatchAwait(List<string> log)
        {
            try
            {
                try
                {
                    await ThrowsLater("async boom");
                    return "not reached";
                }
                finally
                {
                    log.Add("async finally");
                }
            }
            catch (InvalidOperationException e) when (e.Message.StartsWith("async"))
            {
                await Task.Yield();
                return "caught " + e.Message;
            }
        }

        static async Task<int> AllFail()
        {
            Task<int> a = ThrowsLater("first");
            Task<int> b = ThrowsLater("second");
            try
            {
                await Task.WhenAll(a, b);
                return 0;
            }
            catch (InvalidOperationException)
            {
                // The await rethrows the first; the task holds both, in order.
                return a.Exception.InnerExceptions.Count + b.Exception.InnerExceptions.Count;
            }
        }

        static void Async()
        {
            Section("async");
            Console.WriteLine("fanout " + FanOut().GetAwaiter().GetResult());
            var log = new List<string>();
            Console.WriteLine(CatchAwait(log).GetAwaiter().GetResult() + " / " + string.Join(",", log));
            Console.WriteLine("faulted " + AllFail().GetAwaiter().GetResult());
            Task<int> completed = Task.FromResult(5);
            Console.WriteLine("sync " + Middle(completed.Result).Result);
        }

        // ---- iterators -------------------------------------------------------------

        static IEnumerable<long> Fibs(int n)
        {
            long a = 0, b = 1;
            for (int i = 0; i < n; i++)
            {
                yield return a;
                long t = a + b;
                a = b;
                b = t;
            }
        }

        static IEnumerable<string> Guarded(List<string> log)
        {
            try
            {
                log.Add("start");
                yield return "x";
                yield return "y";
                yield return "z";
            }
            finally
            {
                log.Add("finally");
            }
        }

        static IEnumerable<int> Walk(int depth, int label)
        {
            yield return label;
            if (depth > 0)
            {
                foreach (int x in Walk(depth - 1, label * 2))
                    yield return x;
                foreach (int x in Walk(depth - 1, label * 2 + 1))
                    yield return x;
            }
        }

        static IEnumerable<int> ThrowsAt(int n)
        {
            for (int i = 0; ; i++)
            {
                if (i == n)
                    throw new CodeException(n);
                yield return i;
            }
        }

        static void Iterators()
        {
            Section("iterators");
            Console.WriteLine("fibs " + string.Join(",", Fibs(15)));
            var log = new List<string>();
            Console.WriteLine("taken " + string.Join(",", Guarded(log).Take(2)) + " log " + string.Join(",", log));
            Console.WriteLine("walk " + string.Join(",", Walk(3, 1)));
            var seen = new List<int>();
            try
            {
                foreach (int i in ThrowsAt(4))
                    seen.Add(i);
            }
            catch (CodeException e)
            {
                Console.WriteLine("iterator threw " + e.Code + " after " + string.Join(",", seen));
            }
        }

        // ---- exception filters -----------------------------------------------------

        static bool Note(List<string> log, string what, bool result)
        {
            log.Add(what);
            return result;
        }

        static bool ThrowingFilter(List<string> log)
        {
            log.Add("filter throws");
            throw new InvalidOperationException("in filter");
        }

        static void Raise(int code) { throw new CodeException(code); }

        static void Filters()
        {
            Section("filters");
            for (int code = 1; code <= 4; code++)
            {
                var log = new List<string>();
                try
                {
                    try
                    {
                        Raise(code);
                    }
                    finally
                    {
                        log.Add("inner finally");
                    }
                }
                catch (CodeException e) when (Note(log, "filter a" + e.Code, e.Code == 1))
                {
                    log.Add("handler a");
                }
                catch (CodeException e) when (e.Code == 3 && ThrowingFilter(log))
                {
                    log.Add("not reached");
                }
                catch (CodeException e) when (Note(log, "filter b" + e.Code, e.Code == 2))
                {
                    log.Add("handler b");
                }
                catch (Exception e)
                {
                    log.Add("generic " + e.Message);
                }
                Console.WriteLine("code " + code + ": " + string.Join(", ", log));
            }
        }

        // ---- try blocks nested in catch and finally handlers -----------------------

        static void NestedHandlers()
        {
            Section("nested handlers");
            var log = new List<string>();
            try
            {
                try
                {
                    throw new CodeException(1);
                }
                catch (CodeException e1)
                {
                    try
                    {
                        throw new CodeException(e1.Code + 1);
                    }
                    catch (CodeException e2)
                    {
                        log.Add("inner catch " + e2.Code);
                    }
                    finally
                    {
                        log.Add("finally in catch");
                    }
                    try
                    {
                        throw new CodeException(e1.Code + 10);
                    }
                    catch (CodeException e3) when (e3.Code > 10)
                    {
                        log.Add("rethrowing " + e3.Code);
                        throw;
                    }
                }
                finally
                {
                    try
                    {
                        throw new CodeException(3);
                    }
                    catch (CodeException e4)
                    {
                        log.Add("catch in finally " + e4.Code);
                    }
                    finally
                    {
                        log.Add("finally in finally");
                    }
                }
            }
            catch (CodeException outer)
            {
                log.Add("outer " + outer.Code);
            }
            foreach (string line in log)
                Console.WriteLine(line);
            int disposed = 0;
            using (new Disposer(() => disposed++))
            {
                lock (log)
                {
                    log.Clear();
                }
            }
            Console.WriteLine("disposed " + disposed);
        }

        sealed class Disposer : IDisposable
        {
            readonly Action onDispose;
            public Disposer(Action onDispose) { this.onDispose = onDispose; }
            public void Dispose() { onDispose(); }
        }

        // ---- generics --------------------------------------------------------------

        static T Max<T>(T a, T b) where T : IComparable<T>
        {
            return a.CompareTo(b) >= 0 ? a : b;
        }

        static List<U> MapAll<T, U>(IEnumerable<T> items, Func<T, U> f)
        {
            var result = new List<U>();
            foreach (T item in items)
                result.Add(f(item));
            return result;
        }

        static string Describe<T>(T value)
        {
            PerType<T>.Hit();
            return typeof(T).Name + ":" + value;
        }

        static void Generics()
        {
            Section("generics");
            // Unshared (value type) instantiations.
            Console.WriteLine(new Box<int>(4) + " " + new Box<long>(5L) + " " + new Box<Small>(new Small(1, 2)));
            // Shared (reference type) instantiations.
            Console.WriteLine(new Box<string>("s") + " " + new Box<object>("o") + " " + new Box<int[]>(new int[0]).Map(a => a.Length));
            Console.WriteLine(new Box<int>(21).Map(x => x * 2).Map(x => "v" + x));
            Console.WriteLine("max " + Max(3, 9) + " " + Max("pear", "apple") + " " + Max(2.5, -1.0));
            Console.WriteLine("map " + string.Join(",", MapAll(new[] { 1, 2, 3 }, x => x * 10)) + " " + string.Join(",", MapAll(new[] { "a", "bb" }, s => s.Length)));
            Console.WriteLine(Describe(1) + " " + Describe(2) + " " + Describe("x") + " " + Describe(new object[0].Length) + " " + Describe(new Small(3, 4)) + " " + Describe<object>(null));
            Console.WriteLine("per type int " + PerType<int>.Count + " string " + PerType<string>.Count + " object " + PerType<object>.Count + " small " + PerType<Small>.Count);
            var p = new Pair<int, string>(1, "one");
            Console.WriteLine("pair " + p + " " + p.Swap() + " " + new Pair<Small, Named>(new Small(5, 6), new Named("n", 7)).Swap().Second);
            Shape shape = new Circle();
            Console.WriteLine(shape.Show(42) + " / " + shape.Show("str") + " / " + new Shape().Show(1.5));
        }

        // ---- structs returned by value ---------------------------------------------

        static Small MakeSmall(int x, int y) { return new Small(x * 2, y * 3); }

        static Big MakeBig(long seed)
        {
            Big b;
            b.A = seed;
            b.B = seed * 2;
            b.C = seed * 3;
            b.D = seed * 4;
            b.E = seed * 5;
            return b;
        }

        static Big AddBig(Big x, Big y)
        {
            Big r = x;
            r.A += y.A;
            r.B += y.B;
            r.C += y.C;
            r.D += y.D;
            r.E += y.E;
            return r;
        }

        static Named MakeNamed(int i) { return new Named("item" + i, 1000L + i); }

        static void Structs()
        {
            Section("structs");
            Small s = MakeSmall(3, 4);
            Console.WriteLine("small " + s + " " + MakeSmall(s.X, s.Y));
            Big b = AddBig(MakeBig(1), MakeBig(10));
            Console.WriteLine("big " + b + " sum " + b.Sum());
            Named n = MakeNamed(5);
            Console.WriteLine("named " + n.Name + " " + n.Id);
            Big[] many = new Big[4];
            for (int i = 0; i < many.Length; i++)
                many[i] = MakeBig(i);
            long total = 0;
            foreach (Big x in many)
                total += x.Sum();
            Console.WriteLine("array total " + total);
        }

        // ---- switch ----------------------------------------------------------------

        static string Digit(int d)
        {
            switch (d)
            {
                case 0: return "zero";
                case 1: return "one";
                case 2: return "two";
                case 3: return "three";
                case 4: return "four";
                case 5: return "five";
                case 6: return "six";
                case 7: return "seven";
                case 8: return "eight";
                case 9: return "nine";
                default: return "other";
            }
        }

        static int Fallthrough(int k)
        {
            int r = 0;
            switch (k)
            {
                case 10: r += 1; goto case 11;
                case 11: r += 10; goto case 12;
                case 12: r += 100; break;
                case 13: r = -1; break;
                case 14:
                case 15: r = 15; break;
            }
            return r;
        }

        static int Month(string name)
        {
            switch (name)
            {
                case "jan": return 1;
                case "feb": return 2;
                case "mar": return 3;
                case "apr": return 4;
                case "may": return 5;
                case "jun": return 6;
                case "jul": return 7;
                case "aug": return 8;
                default: return 0;
            }
        }

        static void Switches()
        {
            Section("switch");
            var sb = new StringBuilder();
            for (int i = -1; i <= 10; i++)
                sb.Append(Digit(i)).Append(' ');
            Console.WriteLine(sb.ToString().TrimEnd());
            Console.WriteLine("fallthrough " + string.Join(",", Enumerable.Range(9, 8).Select(Fallthrough)));
            Console.WriteLine("months " + Month("jan") + Month("may") + Month("aug") + Month("dec"));
        }

        // ---- recursion -------------------------------------------------------------

        static int Fib(int n) { return n < 2 ? n : Fib(n - 1) + Fib(n - 2); }

        static int Ackermann(int m, int n)
        {
            if (m == 0) return n + 1;
            if (n == 0) return Ackermann(m - 1, 1);
            return Ackermann(m - 1, Ackermann(m, n - 1));
        }

        static bool IsEven(int n) { return n == 0 || IsOdd(n - 1); }
        static bool IsOdd(int n) { return n != 0 && IsEven(n - 1); }

        static long Hanoi(int disks, int from, int to, int via)
        {
            if (disks == 0) return 0;
            return Hanoi(disks - 1, from, via, to) + 1 + Hanoi(disks - 1, via, to, from);
        }

        static void Recursion()
        {
            Section("recursion");
            Console.WriteLine("fib " + Fib(20) + " ackermann " + Ackermann(2, 3) + " even " + IsEven(25) + " hanoi " + Hanoi(10, 1, 3, 2));
        }

        // ---- localloc (stackalloc) -------------------------------------------------

        static unsafe int StackSum(int n)
        {
            int* p = stackalloc int[n];
            for (int i = 0; i < n; i++)
                p[i] = i * i;
            int sum = 0;
            for (int i = 0; i < n; i++)
                sum += p[i];
            return sum;
        }

        static unsafe string StackText(int n)
        {
            char* c = stackalloc char[n];
            try
            {
                for (int i = 0; i < n; i++)
                    c[i] = (char)('a' + i % 26);
                if (n > 30)
                    throw new CodeException(n);
                return new string(c, 0, n);
            }
            catch (CodeException e)
            {
                return "too long " + e.Code;
            }
        }

        static void Localloc()
        {
            Section("localloc");
            Console.WriteLine("stack sum " + StackSum(10) + " " + StackSum(100) + " text " + StackText(5) + " " + StackText(40));
        }

        // ---- exceptions across frames ----------------------------------------------

        static int Descend(int n, List<string> log)
        {
            try
            {
                if (n == 0)
                    throw new CodeException(99);
                return Descend(n - 1, log) + 1;
            }
            finally
            {
                log.Add("unwind " + n);
            }
        }

        static int Wrap(int n)
        {
            try
            {
                return Descend(n, new List<string>());
            }
            catch (CodeException e)
            {
                throw new InvalidOperationException("wrapped", e);
            }
        }

        static T ThroughGeneric<T>(Func<T> f) { return f(); }

        static int Thrower(int code) { throw new CodeException(code); }

        static void CrossFrame()
        {
            Section("cross frame");
            var log = new List<string>();
            try
            {
                Descend(3, log);
            }
            catch (CodeException e)
            {
                log.Add("caught " + e.Code);
            }
            Console.WriteLine(string.Join(", ", log));
            try
            {
                Wrap(5);
            }
            catch (InvalidOperationException e)
            {
                Console.WriteLine(e.Message + " inner " + ((CodeException)e.InnerException).Code);
            }
            try
            {
                ThroughGeneric(() => Thrower(7));
            }
            catch (CodeException e)
            {
                Console.WriteLine("through generic and delegate " + e.Code);
            }
            try
            {
                typeof(Program).GetMethod("Thrower", BindingFlags.NonPublic | BindingFlags.Static).Invoke(null, new object[] { 8 });
            }
            catch (TargetInvocationException e)
            {
                Console.WriteLine("through reflection " + ((CodeException)e.InnerException).Code);
            }
            for (int attempt = 0; attempt < 2; attempt++)
            {
                try
                {
                    Console.WriteLine(Broken.Value);
                }
                catch (TypeInitializationException e)
                {
                    Console.WriteLine("type initializer " + attempt + " " + e.InnerException.Message);
                }
            }
            try
            {
                object o = "not a number";
                Console.WriteLine((int)o);
            }
            catch (InvalidCastException)
            {
                Console.WriteLine("invalid cast");
            }
            try
            {
                int[] a = new int[2];
                int i = a.Length + 1;
                a[i] = 1;
            }
            catch (IndexOutOfRangeException)
            {
                Console.WriteLine("index out of range");
            }
            try
            {
                string s = null;
                Console.WriteLine(s.Length);
            }
            catch (NullReferenceException)
            {
                Console.WriteLine("null reference");
            }
            try
            {
                int zero = log.Count - log.Count;
                Console.WriteLine(1 / zero);
            }
            catch (DivideByZeroException)
            {
                Console.WriteLine("divide by zero");
            }
        }
    }
}
