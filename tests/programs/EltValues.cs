// EltValues.exe: methods whose arguments and return values fill every register the
// x86_64 System V convention uses, for the enter/leave hooks: a hook that damages a
// register the JIT keeps live changes what these methods compute.
//
//   EltValues.exe [ROUNDS]     (100 by default)
//   EltValues.exe trace        (one round, each call traced)
//
// Every method of EltValues.Calls is NoInlining and computes its result from every
// argument, so a damaged argument or return register changes it:
//   int, long, float, double: one argument, one result of the same type;
//   Ints(8 ints): more than six integer arguments (two on the stack);
//   Floats(10 doubles): more than eight float arguments (two on the stack);
//   Mixed(8 ints interleaved with 10 floats and doubles);
//   the structs returned in two registers, one per return class: LL (long, long:
//   RAX:RDX), LD (long, double: RAX:XMM0), DL (double, long: XMM0:RAX), DD (double,
//   double: XMM0:XMM1), FFFF (4 floats: XMM0:XMM1); IF (int, float: one register, RAX)
//   and Big (3 longs: returned through a hidden buffer), each made from its arguments
//   and also passed back in as an argument (Sum*);
//   an instance method (`this` in RDI) and one taking and returning a string.
// ROUNDS rounds call each method with values that change every round and fold every
// result's bits into one checksum per method, printed as `NAME CHECKSUM` lines; then
// `rounds N`. Exit code 46.
//
// With `trace`, one round, and before each checksum line the program prints what the
// hooks must have seen: `enter Calls::NAME ARG...` and `leave Calls::NAME RESULT`, with
// int and long in decimal, float as `f32:` and double as `f64:` and the bits in hex
// (8 and 16 digits), a struct as `struct:` and its bytes in memory order in hex, and an
// object reference (`this`, a string) as `obj`.
//
// Built by build.sh: mcs -sdk:4.5 -optimize+ -debug-
using System;
using System.Runtime.CompilerServices;
using System.Text;

namespace EltValues
{
    struct LL { public long A; public long B; }
    struct LD { public long A; public double B; }
    struct DL { public double A; public long B; }
    struct DD { public double A; public double B; }
    struct FFFF { public float A; public float B; public float C; public float D; }
    struct IF { public int A; public float B; }
    struct Big { public long A; public long B; public long C; }

    sealed class Calls
    {
        public long Seed;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int I4(int a) { return a * 3 + 1; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long I8(long a) { return a * 5 - 7; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static float R4(float a) { return a * 1.5f + 0.25f; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double R8(double a) { return a * 2.5 - 0.125; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Ints(int a, int b, int c, int d, int e, int f, int g, int h)
        {
            return a + 3L * b + 5L * c + 7L * d + 11L * e + 13L * f + 17L * g + 19L * h;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double Floats(double a, double b, double c, double d, double e,
                                    double f, double g, double h, double i, double j)
        {
            return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double Mixed(int a, double b, long c, float d, int e, double f, long g,
                                   float h, int i, double j, long k, float l, int m,
                                   double n, long o, float p, double q, float r)
        {
            return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i
                + 10 * j + 11 * k + 12 * l + 13 * m + 14 * n + 15 * o + 16 * p + 17 * q
                + 18 * r;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static LL MakeLL(long a, long b) { LL s; s.A = a * 3; s.B = b - 11; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static LD MakeLD(long a, double b) { LD s; s.A = a + 1; s.B = b * 0.5; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static DL MakeDL(double a, long b) { DL s; s.A = a - 3.75; s.B = b * 7; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static DD MakeDD(double a, double b) { DD s; s.A = a * 3; s.B = b + 0.5; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static FFFF MakeFFFF(float a, float b, float c, float d)
        {
            FFFF s; s.A = a + 1; s.B = b * 2; s.C = c - 3; s.D = d * 0.5f; return s;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static IF MakeIF(int a, float b) { IF s; s.A = a ^ 0x55; s.B = b + 0.75f; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Big MakeBig(long a, long b, long c)
        {
            Big s; s.A = a + b; s.B = b + c; s.C = c + a; return s;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double SumLL(LL s, int k) { return s.A + 2.0 * s.B + k; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double SumLD(LD s, int k) { return s.A + 2.0 * s.B + k; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double SumDL(DL s, int k) { return s.A + 2.0 * s.B + k; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double SumDD(DD s, int k) { return s.A + 2.0 * s.B + k; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double SumFFFF(FFFF s, int k) { return s.A + 2.0 * s.B + 3.0 * s.C + 4.0 * s.D + k; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double SumIF(IF s, int k) { return s.A + 2.0 * s.B + k; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double SumBig(Big s, int k) { return s.A + 2.0 * s.B + 3.0 * s.C + k; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public long Instance(long a, double b) { return Seed + a + (long)(b * 4); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static string Text(string s, int n) { return s.Length + n > 10 ? s : s + n; }
    }

    static class Program
    {
        static bool trace;

        static string Bytes(long v)
        {
            var sb = new StringBuilder();
            foreach (byte b in BitConverter.GetBytes(v)) sb.Append(b.ToString("x2"));
            return sb.ToString();
        }

        static string Bytes(int v)
        {
            var sb = new StringBuilder();
            foreach (byte b in BitConverter.GetBytes(v)) sb.Append(b.ToString("x2"));
            return sb.ToString();
        }

        static long Bits(double d) { return BitConverter.DoubleToInt64Bits(d); }
        static int Bits(float f) { return BitConverter.ToInt32(BitConverter.GetBytes(f), 0); }

        static string V(int v) { return v.ToString(); }
        static string V(long v) { return v.ToString(); }
        static string V(float v) { return "f32:" + ((uint)Bits(v)).ToString("x8"); }
        static string V(double v) { return "f64:" + ((ulong)Bits(v)).ToString("x16"); }
        static string V(LL s) { return "struct:" + Bytes(s.A) + Bytes(s.B); }
        static string V(LD s) { return "struct:" + Bytes(s.A) + Bytes(Bits(s.B)); }
        static string V(DL s) { return "struct:" + Bytes(Bits(s.A)) + Bytes(s.B); }
        static string V(DD s) { return "struct:" + Bytes(Bits(s.A)) + Bytes(Bits(s.B)); }
        static string V(FFFF s)
        {
            return "struct:" + Bytes(Bits(s.A)) + Bytes(Bits(s.B)) + Bytes(Bits(s.C)) + Bytes(Bits(s.D));
        }
        static string V(IF s) { return "struct:" + Bytes(s.A) + Bytes(Bits(s.B)); }
        static string V(Big s) { return "struct:" + Bytes(s.A) + Bytes(s.B) + Bytes(s.C); }

        // Prints the enter and leave lines of one call, in trace mode.
        static void Traced(string name, string result, params string[] args)
        {
            if (!trace) return;
            Console.WriteLine("enter Calls::" + name + (args.Length > 0 ? " " + string.Join(" ", args) : ""));
            Console.WriteLine("leave Calls::" + name + " " + result);
        }

        static ulong Fold(ulong sum, long bits) { return (sum ^ (ulong)bits) * 1099511628211UL; }

        static int Main(string[] args)
        {
            int rounds = 100;
            if (args.Length > 0 && args[0] == "trace") { trace = true; rounds = 1; }
            else if (args.Length > 0) rounds = int.Parse(args[0]);
            string[] names = {
                "I4", "I8", "R4", "R8", "Ints", "Floats", "Mixed", "LL", "LD", "DL", "DD",
                "FFFF", "IF", "Big", "Instance", "Text",
            };
            var sums = new ulong[names.Length];
            var calls = new Calls();
            for (int r = 0; r < rounds; r++)
            {
                int i = r + 3;
                long l = r * 1000003L - 77;
                float f = r * 0.75f + 0.5f;
                double d = r * 1.375 - 2.5;
                calls.Seed = r;

                int i4 = Calls.I4(i);
                Traced("I4", V(i4), V(i));
                sums[0] = Fold(sums[0], i4);
                long i8 = Calls.I8(l);
                Traced("I8", V(i8), V(l));
                sums[1] = Fold(sums[1], i8);
                float r4 = Calls.R4(f);
                Traced("R4", V(r4), V(f));
                sums[2] = Fold(sums[2], Bits(r4));
                double r8 = Calls.R8(d);
                Traced("R8", V(r8), V(d));
                sums[3] = Fold(sums[3], Bits(r8));

                long ints = Calls.Ints(i, i + 1, i + 2, i + 3, i + 4, i + 5, i + 6, i + 7);
                Traced("Ints", V(ints), V(i), V(i + 1), V(i + 2), V(i + 3), V(i + 4), V(i + 5), V(i + 6), V(i + 7));
                sums[4] = Fold(sums[4], ints);
                double floats = Calls.Floats(d, d + 1, d + 2, d + 3, d + 4, d + 5, d + 6, d + 7, d + 8, d + 9);
                Traced("Floats", V(floats), V(d), V(d + 1), V(d + 2), V(d + 3), V(d + 4), V(d + 5), V(d + 6), V(d + 7), V(d + 8), V(d + 9));
                sums[5] = Fold(sums[5], Bits(floats));
                double mixed = Calls.Mixed(i, d, l, f, i + 1, d + 1, l + 1, f + 1, i + 2, d + 2,
                                           l + 2, f + 2, i + 3, d + 3, l + 3, f + 3, d + 4, f + 4);
                Traced("Mixed", V(mixed), V(i), V(d), V(l), V(f), V(i + 1), V(d + 1), V(l + 1), V(f + 1), V(i + 2), V(d + 2),
                       V(l + 2), V(f + 2), V(i + 3), V(d + 3), V(l + 3), V(f + 3), V(d + 4), V(f + 4));
                sums[6] = Fold(sums[6], Bits(mixed));

                LL ll = Calls.MakeLL(l, l + 5);
                Traced("MakeLL", V(ll), V(l), V(l + 5));
                double sll = Calls.SumLL(ll, i);
                Traced("SumLL", V(sll), V(ll), V(i));
                sums[7] = Fold(Fold(Fold(sums[7], ll.A), ll.B), Bits(sll));
                LD ld = Calls.MakeLD(l, d);
                Traced("MakeLD", V(ld), V(l), V(d));
                double sld = Calls.SumLD(ld, i);
                Traced("SumLD", V(sld), V(ld), V(i));
                sums[8] = Fold(Fold(Fold(sums[8], ld.A), Bits(ld.B)), Bits(sld));
                DL dl = Calls.MakeDL(d, l);
                Traced("MakeDL", V(dl), V(d), V(l));
                double sdl = Calls.SumDL(dl, i);
                Traced("SumDL", V(sdl), V(dl), V(i));
                sums[9] = Fold(Fold(Fold(sums[9], Bits(dl.A)), dl.B), Bits(sdl));
                DD dd = Calls.MakeDD(d, d + 0.5);
                Traced("MakeDD", V(dd), V(d), V(d + 0.5));
                double sdd = Calls.SumDD(dd, i);
                Traced("SumDD", V(sdd), V(dd), V(i));
                sums[10] = Fold(Fold(Fold(sums[10], Bits(dd.A)), Bits(dd.B)), Bits(sdd));
                FFFF ff = Calls.MakeFFFF(f, f + 1, f + 2, f + 3);
                Traced("MakeFFFF", V(ff), V(f), V(f + 1), V(f + 2), V(f + 3));
                double sff = Calls.SumFFFF(ff, i);
                Traced("SumFFFF", V(sff), V(ff), V(i));
                sums[11] = Fold(Fold(Fold(Fold(Fold(sums[11], Bits(ff.A)), Bits(ff.B)), Bits(ff.C)), Bits(ff.D)), Bits(sff));
                IF fi = Calls.MakeIF(i, f);
                Traced("MakeIF", V(fi), V(i), V(f));
                double sfi = Calls.SumIF(fi, i);
                Traced("SumIF", V(sfi), V(fi), V(i));
                sums[12] = Fold(Fold(Fold(sums[12], fi.A), Bits(fi.B)), Bits(sfi));
                Big big = Calls.MakeBig(l, l + 1, l + 2);
                Traced("MakeBig", V(big), V(l), V(l + 1), V(l + 2));
                double sbig = Calls.SumBig(big, i);
                Traced("SumBig", V(sbig), V(big), V(i));
                sums[13] = Fold(Fold(Fold(Fold(sums[13], big.A), big.B), big.C), Bits(sbig));

                long inst = calls.Instance(l, d);
                Traced("Instance", V(inst), "obj", V(l), V(d));
                sums[14] = Fold(sums[14], inst);
                string text = Calls.Text("r" + r, i);
                Traced("Text", "obj", "obj", V(i));
                sums[15] = Fold(sums[15], text.Length);
            }
            for (int k = 0; k < names.Length; k++)
                Console.WriteLine(names[k] + " " + sums[k].ToString("x16"));
            Console.WriteLine("rounds " + rounds);
            return 46;
        }
    }
}
