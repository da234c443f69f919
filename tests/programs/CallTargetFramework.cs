// CallTargetFramework.exe: an HttpClient-like request path without network, through
// framework methods whose code is precompiled (ReadyToRun) in System.Private.CoreLib:
// the framework targets of CallTarget (issue 32). Exit code 51 (99 if a result the
// program checks itself is wrong).
//
// Per request (ROUNDS rounds of REQUESTS requests, id = 0, 1, ...):
//   headers   a new Dictionary<string, string> (shared canonical code): Add of 4 or 5
//             headers, the indexer's set (overwriting Accept for even ids), ContainsKey
//             and, for ids divisible by 5, Remove of Connection;
//   text      a StringBuilder: Append(string), Append(int), Append(char) for the request
//             line, then per header name present (TryGetValue on each of 6 names)
//             Append of name, ": ", value and '\n'; AppendFormat of a sequence header,
//             Insert(0, "> ") and ToString;
//   stats     Dictionary<string, int> (a value-type instantiation) of the total value
//             length per header name: TryGetValue, then the indexer's set or Add;
//   send      every SEND_EVERY-th request goes to the "server" by Task.Run (a Task<int>
//             of its status code), awaited; ids with id % 97 == 13 fault
//             (InvalidOperationException, caught: status 500); the sends of a round
//             are awaited together by Task.WhenAll; statuses are counted in a
//             Dictionary<int, int> (unshared code).
//   continue  per send also Task.Run(Func<int>).ContinueWith (Task<int>'s) and
//             Task.Run(Action).ContinueWith (Task's), and for a faulting id a
//             ContinueWith that observes the fault.
// Rounds are separated by a 100 ms sleep, so that tiered compilation promotes the hot
// methods while the program runs. Everything printed is a result (no timing, no thread
// id): sample requests, a checksum (FNV-1a) of every request text, the header
// statistics, the statuses, the continuations' sums. Then one line per target type
// with the program's own calls of the methods the tests select (`own <type> N`):
//   System.Text.StringBuilder    Append, AppendFormat, Insert, ToString
//   Dictionary`2[String,String]  set_Item, get_Item, ContainsKey, Remove, TryGetValue
//   Dictionary`2[String,Int32]   the same
//   Dictionary`2[Int32,Int32]    the same
//   System.Threading.Tasks.Task  Run
//   Task`1[Int32]                ContinueWith
//   Task                         ContinueWith (own line `own-continue`)
// (a lower bound of what a hook on those methods counts: the framework calls them
// too); and its calls of Dictionary`2's Add per instantiation (`own-add <type> N`).
// Nothing on stderr.
//
// Built by build_framework.sh against CoreCLR's System.Private.CoreLib.
using System;
using System.Collections.Generic;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace CallTargetFramework
{
    static class Own
    {
        internal static int Builder;
        internal static int Headers;
        internal static int Stats;
        internal static int Statuses;
        internal static int HeadersAdd;
        internal static int StatsAdd;
        internal static int StatusesAdd;
        internal static int Run;
        internal static int ContinueValue;
        internal static int ContinueVoid;
    }

    static class Program
    {
        const int Rounds = 4;
        const int Requests = 750;
        const int SendEvery = 5;

        static readonly string[] Names = { "Host", "Accept", "User-Agent", "Connection", "X-Request-Id", "Cookie" };

        static readonly Dictionary<string, int> stats = new Dictionary<string, int>();
        static readonly Dictionary<int, int> statuses = new Dictionary<int, int>();
        static ulong checksum = 14695981039346656037UL;
        static long continuedSum;
        static long voidSum;
        static int faultsSeen;

        static int Main()
        {
            int sends = 0;
            for (int round = 0; round < Rounds; round++)
            {
                if (round > 0)
                    Thread.Sleep(100);
                List<Task<int>> pending = new List<Task<int>>();
                List<Task> continuations = new List<Task>();
                for (int i = 0; i < Requests; i++)
                {
                    int id = round * Requests + i;
                    string text = Build(id);
                    Hash(text);
                    if (id < 2)
                        Console.Write(text);
                    if (id % SendEvery == 0)
                    {
                        pending.Add(SendAsync(text, id));
                        Continue(id, continuations);
                        sends++;
                    }
                }
                int[] codes = Task.WhenAll(pending).GetAwaiter().GetResult();
                Task.WhenAll(continuations).GetAwaiter().GetResult();
                foreach (int code in codes)
                    Count(code);
                Console.WriteLine("round " + round + " sends " + codes.Length);
            }
            Console.WriteLine("requests " + Rounds * Requests + " checksum " + checksum.ToString("x16"));
            foreach (string name in Names)
            {
                int total;
                Own.Stats++;
                if (stats.TryGetValue(name, out total))
                    Console.WriteLine("header " + name + " " + total);
                else
                    Console.WriteLine("header " + name + " none");
            }
            int[] codesSeen = { 200, 404, 500, 503 };
            foreach (int code in codesSeen)
            {
                Own.Statuses++;
                if (statuses.ContainsKey(code))
                {
                    Own.Statuses++;
                    Console.WriteLine("status " + code + " " + statuses[code]);
                }
            }
            Console.WriteLine("continued " + continuedSum + " void " + voidSum + " faults-seen " + faultsSeen);
            bool ok = sends == Rounds * Requests / SendEvery
                && continuedSum == ExpectedContinued()
                && statuses[500] == faultsSeen;
            Own.Statuses++;
            Console.WriteLine("own System.Text.StringBuilder " + Own.Builder);
            Console.WriteLine("own System.Collections.Generic.Dictionary`2[System.String,System.String] " + Own.Headers);
            Console.WriteLine("own System.Collections.Generic.Dictionary`2[System.String,System.Int32] " + Own.Stats);
            Console.WriteLine("own System.Collections.Generic.Dictionary`2[System.Int32,System.Int32] " + Own.Statuses);
            Console.WriteLine("own System.Threading.Tasks.Task " + Own.Run);
            Console.WriteLine("own System.Threading.Tasks.Task`1[System.Int32] " + Own.ContinueValue);
            Console.WriteLine("own-continue System.Threading.Tasks.Task " + Own.ContinueVoid);
            Console.WriteLine("own-add System.Collections.Generic.Dictionary`2[System.String,System.String] " + Own.HeadersAdd);
            Console.WriteLine("own-add System.Collections.Generic.Dictionary`2[System.String,System.Int32] " + Own.StatsAdd);
            Console.WriteLine("own-add System.Collections.Generic.Dictionary`2[System.Int32,System.Int32] " + Own.StatusesAdd);
            return ok ? 51 : 99;
        }

        static long ExpectedContinued()
        {
            long sum = 0;
            for (int id = 0; id < Rounds * Requests; id += SendEvery)
                sum += 2L * id + 1;
            return sum;
        }

        static string Build(int id)
        {
            Dictionary<string, string> headers = new Dictionary<string, string>();
            Own.HeadersAdd += 4;
            headers.Add("Host", "example.test");
            headers.Add("Accept", "*/*");
            headers.Add("User-Agent", "calltarget/1.0");
            headers.Add("Connection", "keep-alive");
            if (id % 3 == 0)
            {
                Own.HeadersAdd++;
                headers.Add("X-Request-Id", "r" + id);
            }
            if (id % 2 == 0)
            {
                Own.Headers++;
                headers["Accept"] = "text/plain";
            }
            Own.Headers++;
            bool connection = headers.ContainsKey("Connection");
            if (!connection)
                Fail("no Connection header");
            if (id % 5 == 0)
            {
                Own.Headers++;
                headers.Remove("Connection");
            }
            Own.Headers++;
            string host = headers["Host"];

            StringBuilder sb = new StringBuilder();
            Own.Builder += 8;
            sb.Append("GET /items/");
            sb.Append(id);
            sb.Append(' ');
            sb.Append("HTTP/1.1");
            sb.Append('\n');
            sb.Append("X-Host-Length: ");
            sb.Append(host.Length);
            sb.Append('\n');
            foreach (string name in Names)
            {
                string value;
                Own.Headers++;
                if (!headers.TryGetValue(name, out value))
                    continue;
                Own.Builder += 4;
                sb.Append(name).Append(": ").Append(value).Append('\n');
                int total;
                Own.Stats++;
                if (stats.TryGetValue(name, out total))
                {
                    Own.Stats++;
                    stats[name] = total + value.Length;
                }
                else
                {
                    Own.StatsAdd++;
                    stats.Add(name, value.Length);
                }
            }
            Own.Builder += 3;
            sb.AppendFormat("X-Sequence: {0}/{1}\n", id, id % 7);
            sb.Insert(0, "> ");
            return sb.ToString();
        }

        static void Hash(string text)
        {
            foreach (char c in text)
            {
                checksum ^= c;
                checksum *= 1099511628211UL;
            }
        }

        static void Count(int code)
        {
            int n;
            Own.Statuses++;
            if (statuses.TryGetValue(code, out n))
            {
                Own.Statuses++;
                statuses[code] = n + 1;
            }
            else
            {
                Own.StatusesAdd++;
                statuses.Add(code, 1);
            }
        }

        static void Fail(string why)
        {
            Console.WriteLine("FAIL " + why);
            Environment.Exit(99);
        }

        static int Serve(string request, int id)
        {
            if (id % 97 == 13)
                throw new InvalidOperationException("bad request " + id);
            return request.Length % 4 == 0 ? 404 : 200;
        }

        static async Task<int> SendAsync(string request, int id)
        {
            Own.Run++;
            Task<int> response = Task.Run(() => Serve(request, id));
            try
            {
                return await response;
            }
            catch (InvalidOperationException e)
            {
                if (e.Message != "bad request " + id)
                    Fail("the wrong exception: " + e.Message);
                return 500;
            }
        }

        static void Continue(int id, List<Task> continuations)
        {
            Own.Run += 2;
            Own.ContinueValue++;
            Own.ContinueVoid++;
            continuations.Add(Task.Run(() => 2 * id).ContinueWith(t => Interlocked.Add(ref continuedSum, t.Result + 1)));
            continuations.Add(Task.Run(() => { Interlocked.Add(ref voidSum, id); }).ContinueWith(t => Interlocked.Increment(ref voidSum)));
            if (id % 97 == 13)
            {
                Own.Run++;
                Own.ContinueValue++;
                continuations.Add(Task.Run(() => Serve("", id)).ContinueWith(t =>
                {
                    if (t.IsFaulted && t.Exception.InnerException is InvalidOperationException)
                        Interlocked.Increment(ref faultsSeen);
                }));
            }
        }
    }
}
