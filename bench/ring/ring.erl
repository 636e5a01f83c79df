%% The Armstrong ring in Erlang: the anchor for bench/ring (same protocol as
%% examples/ring.lua). Usage: erl -noshell -run ring main N M
-module(ring).
-export([main/1]).

main([NS, MS]) ->
    N = list_to_integer(NS),
    M = list_to_integer(MS),
    Main = self(),
    T0 = erlang:monotonic_time(nanosecond),
    First = spawn(fun() -> member(Main) end),
    Last = lists:foldl(fun(_, Prev) ->
                               P = spawn(fun() -> member(Main) end),
                               Prev ! {next, P},
                               P
                       end, First, lists:seq(2, N)),
    Last ! {next, First},
    First ! N - 1,
    receive done -> ok end,
    T1 = erlang:monotonic_time(nanosecond),
    First ! N * M - 1,
    receive done -> ok end,
    T2 = erlang:monotonic_time(nanosecond),
    io:format("ring N=~p M=~p create=~.3fs ns_per_send=~.1f~n",
              [N, M, (T1 - T0) / 1.0e9, (T2 - T1) / (N * M)]),
    halt().

member(Main) ->
    receive {next, Next} -> loop(Main, Next) end.

loop(Main, Next) ->
    receive
        0 -> Main ! done, loop(Main, Next);
        Hops -> Next ! Hops - 1, loop(Main, Next)
    end.
