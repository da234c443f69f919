// ILRewrite.CallTarget.dll: the managed side of CallTarget (issue 32), shared by every
// integration. The contract is in the CallTarget spec (v1): an integration's hooks,
//
//   static CallTargetState OnMethodBegin<TTarget, A1, ..., An>([ref TTarget instance,] ref A1 a1, ..., ref An an);
//   static TReturn OnMethodEnd<TTarget, TReturn>([ref TTarget instance,] TReturn returnValue, Exception exception, ref CallTargetState state);
//   static void OnMethodEnd<TTarget>([ref TTarget instance,] Exception exception, ref CallTargetState state);
//
// exchange a CallTargetState; this assembly defines it and AsyncEnd, the helper an
// end hook calls when its target returns a Task, Task<T>, ValueTask or ValueTask<T>
// (what an async method's kick-off returns): the hook returns the task AsyncEnd gives,
// and the integration's AsyncEndHandler runs when the target's work is done.
//
// Assembly: ILRewrite.CallTarget, version 1.0.0.0, culture neutral, no public key (not
// strong-named). Built by build_framework.sh against CoreCLR's System.Private.CoreLib
// (ValueTask<T> is not in Mono's profile): mcs -nostdlib -target:library -optimize+ -debug-
using System;
using System.Reflection;
using System.Threading;
using System.Threading.Tasks;

[assembly: AssemblyVersion("1.0.0.0")]

namespace ILRewrite.CallTarget
{
    // What a begin hook returns and the end hook receives by reference (the rewritten
    // method's local): an object and a 64-bit value, both the integration's. Default
    // (null, 0) when the begin hook threw.
    public struct CallTargetState
    {
        public object State;
        public long Data;

        public CallTargetState(object state, long data)
        {
            State = state;
            Data = data;
        }
    }

    // The integration's callback for the end of an asynchronous target: subclass it once
    // (a singleton: AsyncEnd allocates nothing for it). Called exactly once per call of
    // an AsyncEnd method, with what `await` of the target's task observes:
    //   * success: the result (for Task and ValueTask, TResult is object and the result
    //     null) and a null exception;
    //   * faulted: default(TResult) and the exception `await` throws, the task's first
    //     inner exception (the same object, not an AggregateException);
    //   * cancelled: default(TResult) and the OperationCanceledException `await` throws:
    //     the object the task recorded (an async method cancelled by a thrown
    //     OperationCanceledException), else a TaskCanceledException;
    //   * a null task: default(TResult) and a null exception (the caller gets the null).
    // An exception thrown by OnAsyncEnd is caught and dropped: the caller never sees it.
    public abstract class AsyncEndHandler
    {
        public abstract void OnAsyncEnd<TResult>(TResult result, Exception exception, CallTargetState state);
    }

    // Continues a target's task with an AsyncEndHandler. What the caller observes of the
    // returned task is what it would have observed of the original:
    //   * the same result; when faulted, the same exception objects in the same order
    //     (so `await` throws the same object, with the stack trace it was captured
    //     with); when cancelled, cancelled with the same CancellationToken and, when the
    //     original recorded one, the same OperationCanceledException object thrown by
    //     `await`; the same status (a task faulted with an OperationCanceledException
    //     stays faulted);
    //   * it completes only after the handler returned (the handler runs on the thread
    //     that completed the original, before any of the caller's continuations).
    // Differences, none of which `await` can see: a task still running when AsyncEnd is
    // called is replaced by another Task object (an Unwrap promise over a continuation),
    // whose AggregateException (`Task.Exception`, `.Result`, `.Wait()`) is a new object
    // over the same inner exceptions; a ValueTask<T> that completed successfully is
    // replaced by `new ValueTask<T>(result)` (its IValueTaskSource, if any, is consumed
    // here, exactly once); a faulted task's exceptions are marked observed (the
    // returned task carries them on: if the caller never observes it, the runtime's
    // UnobservedTaskException reports the returned task).
    // Allocations: none for a task already complete (the handler runs at once and the
    // same task, or an equivalent ValueTask, is returned); for a pending one, a state
    // object, the continuation task and the promise the caller gets.
    public static class AsyncEnd
    {
        // Task: the handler gets TResult = object, null.
        public static Task Continue(Task task, CallTargetState state, AsyncEndHandler handler)
        {
            if (task == null)
            {
                Notify<object>(handler, null, null, state);
                return null;
            }
            if (task.IsCompleted)
            {
                Notify<object>(handler, null, Outcome(task), state);
                return task;
            }
            return task.ContinueWith(TaskEnd, new Pending(handler, state), CancellationToken.None,
                TaskContinuationOptions.ExecuteSynchronously | TaskContinuationOptions.DenyChildAttach,
                TaskScheduler.Default).Unwrap();
        }

        public static Task<T> Continue<T>(Task<T> task, CallTargetState state, AsyncEndHandler handler)
        {
            if (task == null)
            {
                Notify(handler, default(T), null, state);
                return null;
            }
            if (task.IsCompleted)
            {
                Finished(task, state, handler);
                return task;
            }
            return task.ContinueWith(Ends<T>.TaskEnd, new Pending(handler, state), CancellationToken.None,
                TaskContinuationOptions.ExecuteSynchronously | TaskContinuationOptions.DenyChildAttach,
                TaskScheduler.Default).Unwrap();
        }

        public static ValueTask<T> Continue<T>(ValueTask<T> task, CallTargetState state, AsyncEndHandler handler)
        {
            if (task.IsCompletedSuccessfully)
            {
                T result = task.Result;
                Notify(handler, result, null, state);
                return new ValueTask<T>(result);
            }
            return new ValueTask<T>(Continue(task.AsTask(), state, handler));
        }

        public static ValueTask Continue(ValueTask task, CallTargetState state, AsyncEndHandler handler)
        {
            if (task.IsCompletedSuccessfully)
            {
                task.GetAwaiter().GetResult();
                Notify<object>(handler, null, null, state);
                return default(ValueTask);
            }
            return new ValueTask(Continue(task.AsTask(), state, handler));
        }

        // True when TReturn is Task, Task<T>, ValueTask or ValueTask<T> (what
        // ContinueAny<TReturn> continues).
        public static bool IsTaskLike<TReturn>()
        {
            return Dispatch<TReturn>.Impl != null;
        }

        // For a hook generic in its return type: when TReturn is Task, Task<T>,
        // ValueTask or ValueTask<T>, the typed Continue above (the handler gets
        // TResult = T, or object for Task and ValueTask); any other TReturn is returned
        // as is and the handler is not called. The type test is made once per TReturn.
        public static TReturn ContinueAny<TReturn>(TReturn returnValue, CallTargetState state, AsyncEndHandler handler)
        {
            Dispatch<TReturn> impl = Dispatch<TReturn>.Impl;
            return impl == null ? returnValue : impl.Continue(returnValue, state, handler);
        }

        // ---- internals -----------------------------------------------------------------

        sealed class Pending
        {
            internal readonly AsyncEndHandler Handler;
            internal readonly CallTargetState State;

            internal Pending(AsyncEndHandler handler, CallTargetState state)
            {
                Handler = handler;
                State = state;
            }
        }

        static readonly Func<Task, object, Task> TaskEnd = (t, o) =>
        {
            Pending p = (Pending)o;
            Notify<object>(p.Handler, null, Outcome(t), p.State);
            return t;
        };

        static class Ends<T>
        {
            internal static readonly Func<Task<T>, object, Task<T>> TaskEnd = (t, o) =>
            {
                Pending p = (Pending)o;
                Finished(t, p.State, p.Handler);
                return t;
            };
        }

        static void Finished<T>(Task<T> task, CallTargetState state, AsyncEndHandler handler)
        {
            if (task.Status == TaskStatus.RanToCompletion)
                Notify(handler, task.Result, null, state);
            else
                Notify(handler, default(T), Outcome(task), state);
        }

        // The exception `await` throws for a completed task, or null.
        static Exception Outcome(Task task)
        {
            if (task.IsFaulted)
                return task.Exception.InnerExceptions[0];
            if (!task.IsCanceled)
                return null;
            try
            {
                // Only this throws the OperationCanceledException the task recorded. The
                // throw does not change what the caller's own await rethrows (the task's
                // captured dispatch state).
                task.GetAwaiter().GetResult();
                return null;
            }
            catch (Exception e)
            {
                return e;
            }
        }

        static void Notify<TResult>(AsyncEndHandler handler, TResult result, Exception exception, CallTargetState state)
        {
            try
            {
                handler.OnAsyncEnd(result, exception, state);
            }
            catch (Exception)
            {
                // The handler's own failure never reaches the target's caller.
            }
        }

        abstract class Dispatch<TReturn>
        {
            internal static readonly Dispatch<TReturn> Impl = Make();

            internal abstract TReturn Continue(TReturn value, CallTargetState state, AsyncEndHandler handler);

            static Dispatch<TReturn> Make()
            {
                Type t = typeof(TReturn);
                if (t == typeof(Task))
                    return (Dispatch<TReturn>)(object)new TaskDispatch();
                if (t == typeof(ValueTask))
                    return (Dispatch<TReturn>)(object)new ValueTaskDispatch();
                if (!t.IsGenericType)
                    return null;
                Type def = t.GetGenericTypeDefinition();
                Type impl;
                if (def == typeof(Task<>))
                    impl = typeof(TaskOfTDispatch<>);
                else if (def == typeof(ValueTask<>))
                    impl = typeof(ValueTaskOfTDispatch<>);
                else
                    return null;
                return (Dispatch<TReturn>)Activator.CreateInstance(impl.MakeGenericType(t.GetGenericArguments()));
            }
        }

        sealed class TaskDispatch : Dispatch<Task>
        {
            internal override Task Continue(Task value, CallTargetState state, AsyncEndHandler handler)
            {
                return AsyncEnd.Continue(value, state, handler);
            }
        }

        sealed class ValueTaskDispatch : Dispatch<ValueTask>
        {
            internal override ValueTask Continue(ValueTask value, CallTargetState state, AsyncEndHandler handler)
            {
                return AsyncEnd.Continue(value, state, handler);
            }
        }

        sealed class TaskOfTDispatch<T> : Dispatch<Task<T>>
        {
            internal override Task<T> Continue(Task<T> value, CallTargetState state, AsyncEndHandler handler)
            {
                return AsyncEnd.Continue(value, state, handler);
            }
        }

        sealed class ValueTaskOfTDispatch<T> : Dispatch<ValueTask<T>>
        {
            internal override ValueTask<T> Continue(ValueTask<T> value, CallTargetState state, AsyncEndHandler handler)
            {
                return AsyncEnd.Continue(value, state, handler);
            }
        }
    }
}
