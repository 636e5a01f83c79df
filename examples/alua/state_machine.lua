-- ALua state-machine termination (paper §3): A asks B and C to answer and
-- ends once both answers are in. A busy wait would never see the answers
-- (an agent runs one event at a time), so A's state is the function that
-- handles the next answer.
alua.spawn{"B", "C"}

function First_Answer()
  print("first answer")
  Answer = Second_Answer
end

function Second_Answer()
  print("The End.")
  alua.exit()
end

Answer = First_Answer

local msg = [[ alua.send("main", "Answer()") ]]
alua.mcast({"B", "C"}, msg)
