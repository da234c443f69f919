// TwoToolsLib.dll: the second module of TwoTools.exe. `TwoTools.TimedLib::Twice` is
// this module's first MethodDef (token 0x06000001), the token of
// `TwoTools.Timed::Leaf` in TwoTools.exe: a tool that names a method by its token alone
// would mix the two; with the module's id they stay apart.
using System.Runtime.CompilerServices;

namespace TwoTools
{
    public static class TimedLib
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Twice(int x)
        {
            return 2 * x;
        }
    }
}
